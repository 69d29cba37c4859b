"""rackcron's contracts, installed as the package ``rackcron.schemas``.

``v1/*.schema.json`` are the JSON Schemas (Draft 2020-12) of the declared YAML
kinds; the reconciler validates every document against them and editors use
them through the ``yaml-language-server`` modeline. ``notifications/v1/event.schema.json``
is the JSON Schema of the events ``--notify`` webhooks receive (docs/notifications.md).
"""
