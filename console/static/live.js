// rackcron console: the only script. Without it every page works, in UTC and without live
// refresh. With it: times are shown in the viewer's zone and language (UTC stays in the
// tooltip), the tasks table refreshes itself every few seconds, and the timeline moves
// its now-line and reloads its chart every minute, keeping where it was scrolled.
"use strict";
(function () {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  const languages = navigator.languages && navigator.languages.length ? navigator.languages : undefined;
  const stamp = { year: "numeric", month: "short", day: "2-digit", hour: "2-digit",
                  minute: "2-digit", second: "2-digit", hour12: false, timeZoneName: "short" };
  const axisFormats = {
    date: { weekday: "short", day: "numeric", month: "short" },
    time: { hour: "2-digit", minute: "2-digit", hour12: false },
  };
  function localise(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      const at = new Date(el.getAttribute("datetime"));
      if (isNaN(at)) return;
      el.title = el.getAttribute("datetime") + " (UTC)";
      el.textContent = at.toLocaleString(languages, stamp);
    });
    // The axis is drawn in its own zone (the page's ?tz=): only its words change language.
    root.querySelectorAll("svg[data-zone]").forEach(function (svg) {
      const axisZone = svg.getAttribute("data-zone");
      svg.querySelectorAll("text[data-utc]").forEach(function (el) {
        const at = new Date(el.getAttribute("data-utc"));
        const format = axisFormats[el.getAttribute("data-kind")];
        if (isNaN(at) || !format) return;
        try {
          el.textContent = at.toLocaleString(languages, Object.assign({ timeZone: axisZone }, format));
        } catch (e) { /* a zone this browser does not know: the server's label stays */ }
      });
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
          if (note) note.textContent = "Live: updated " + new Date().toLocaleTimeString(languages);
        }
      } catch (e) {
        if (note) note.textContent = "Live refresh paused: the server did not answer.";
      }
    }
    setInterval(refresh, 3000);
  }
  // The now-line, where the clock says now is on the axis: the page may stay open for hours.
  function moveNow(root) {
    root.querySelectorAll("svg.tl-axis, svg.tl-bars").forEach(function (svg) {
      const start = Date.parse(svg.getAttribute("data-start"));
      const end = Date.parse(svg.getAttribute("data-end"));
      const line = svg.querySelector("line.now");
      if (!line || isNaN(start) || isNaN(end)) return;
      const x = (Date.now() - start) / (end - start) * 1000;
      line.setAttribute("x1", x.toFixed(1));
      line.setAttribute("x2", x.toFixed(1));
      line.setAttribute("visibility", x < 0 || x > 1000 ? "hidden" : "visible");
    });
  }
  function chart(area) {
    const url = area.getAttribute("data-live-chart");
    async function refresh() {
      const frame = area.querySelector(".tl-frame");
      const top = frame ? frame.scrollTop : 0, left = frame ? frame.scrollLeft : 0;
      try {
        const answer = await fetch(url, { credentials: "same-origin", cache: "no-store" });
        if (!answer.ok) return;
        const fresh = document.createElement("div");
        fresh.innerHTML = await answer.text();  // the server's escaped HTML, as on the page
        area.replaceChildren(...fresh.childNodes);
        localise(area);
        moveNow(area);
        const again = area.querySelector(".tl-frame");
        if (again) { again.scrollTop = top; again.scrollLeft = left; }
        const note = area.querySelector(".js-live");
        if (note) note.textContent = "Live: updated " + new Date().toLocaleTimeString(languages) + ".";
      } catch (e) {
        const note = area.querySelector(".js-live");
        if (note) note.textContent = "Live refresh paused: the server did not answer.";
      }
    }
    setInterval(function () { moveNow(area); }, 15000);
    setInterval(refresh, 60000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".js-zone").forEach(function (el) {
      if (zone !== "UTC" && zone !== "Etc/UTC") el.textContent = ", shown here in " + zone;
    });
    localise(document);
    document.querySelectorAll("tbody[data-live]").forEach(live);
    document.querySelectorAll("[data-live-chart]").forEach(chart);
    // The timeline in the viewer's own zone: a link, not a reload behind their back.
    document.querySelectorAll("a.js-my-zone").forEach(function (a) {
      const here = new URL(window.location.href);
      if ((here.searchParams.get("tz") || "UTC") === zone) return;
      here.searchParams.set("tz", zone);
      here.searchParams.delete("page");
      a.href = here.pathname + here.search;
      a.textContent = "Draw the axis in " + zone;
      a.hidden = false;
    });
  });
})();
