// rackcron console: the only script. Without it every page works, in UTC and without live
// refresh. With it: times are shown in the viewer's zone (UTC stays in the tooltip), and
// the tasks table refreshes itself every few seconds.
"use strict";
(function () {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  const stamp = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
                  minute: "2-digit", second: "2-digit", hour12: false, timeZoneName: "short" };
  function localise(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      const at = new Date(el.getAttribute("datetime"));
      if (isNaN(at)) return;
      el.title = el.getAttribute("datetime") + " (UTC)";
      el.textContent = at.toLocaleString(undefined, stamp);
    });
    root.querySelectorAll("text[data-utc]").forEach(function (el) {
      const at = new Date(el.getAttribute("data-utc"));
      if (isNaN(at)) return;
      const daily = /^\w{3} \d{2} \w{3}$/.test(el.textContent);
      el.textContent = daily
        ? at.toLocaleDateString(undefined, { weekday: "short", day: "2-digit", month: "short" })
        : at.toLocaleString(undefined, { weekday: "short", hour: "2-digit", minute: "2-digit", hour12: false });
    });
  }
  function live(body) {
    const url = body.getAttribute("data-live");
    const note = document.querySelector(".js-live");
    async function refresh() {
      try {
        const answer = await fetch(url, { credentials: "same-origin", cache: "no-store" });
        if (answer.ok) {
          const rows = document.createElement("tbody");
          rows.innerHTML = await answer.text();  // the server's escaped HTML, as on the page
          body.replaceChildren(...rows.childNodes);
          localise(body);
          if (note) note.textContent = "Live: updated " + new Date().toLocaleTimeString();
        }
      } catch (e) {
        if (note) note.textContent = "Live refresh paused: the server did not answer.";
      }
    }
    setInterval(refresh, 3000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".js-zone").forEach(function (el) {
      el.textContent = ", shown here in " + zone;
    });
    localise(document);
    document.querySelectorAll("tbody[data-live]").forEach(live);
  });
})();
