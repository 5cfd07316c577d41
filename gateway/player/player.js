// @ts-check
// The player page's own script (gateway/player.ts serves it at /assets/player/player.js and renders
// the page around it). Plain ES2017, no build step: it is served as it stands; type-checked with
// JSDoc (tsconfig.json's allowJs) and linted (eslint.config.js) like the rest of the code.
// Engines: hls.js wherever Media Source Extensions exist (it reports HTTP statuses, which renewal
// needs), the browser's native HLS where they do not (iPhone Safari); "?engine=native" or
// "?engine=hls.js" on the page's URL forces one (Chromium 141+ plays HLS natively too, so both are
// testable there).
// Renewal: a timer fires about 60 s before the `expires` in the URL (read against the server's
// clock), and a 403 from the current source renews at once; either way the new master URL is loaded
// and playback resumes where it was. window.__player is the state tests read.
// Clear Key protected videos (cbcs or cenc CMAF) play in Shaka Player, whose license requests go to
// "drm/clearkey" beside the manifest, under the same token; a renewal moves both.
"use strict";

/**
 * What the page's JSON block (id "player-config") holds: PlayerConfig in gateway/player.ts.
 * @typedef {{ videoId: string, title: string, playbackUrl: string, renewUrl: string, hlsScript: string,
 *   hlsWorker: string, drm?: "clearkey", shakaScript?: string, serverNow: number }} PlayerConfig
 */

(function () {
  var LEAD_MS = 60000; // renew this long before the URL expires...
  var MIN_DELAY_MS = 5000; // ...but not sooner than this (or half the remaining lifetime) after a switch
  var MAX_DAY_MS = 86400000; // setTimeout overflows past 2^31 ms: long lifetimes are re-checked daily
  var MAX_FAILED = 3; // renewals in a row that did not bring playable data before giving up
  var STUCK_MS = 6000; // native engine: playing without progress this long asks why

  /** @type {PlayerConfig} */
  var config = JSON.parse(byId("player-config").textContent || "null");
  var video = /** @type {HTMLVideoElement} */ (byId("player"));
  var errorBox = byId("player-error");
  /** @type {{ renewals: number, engine: string, source: string, resumedAt: number | null, error: string | null, autoplay: boolean }} */
  var state = { renewals: 0, engine: "", source: config.playbackUrl, resumedAt: null, error: null, autoplay: false };
  /** @type {any} */ (window).__player = state;
  var skewMs = typeof config.serverNow === "number" ? Date.now() - config.serverNow : 0;
  // The engines' own objects (hls.js, Shaka Player): loaded at run time, without type declarations.
  /** @type {any} */
  var Hls = null;
  /** @type {any} */
  var hls = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  var timer;
  var renewing = false;
  var probing = false;
  var failed = 0;
  var mediaRecovered = false;
  var wantPlay = false;
  var loadWanted = false; // hls.js fetches segments only once the viewer presses play
  var manifestParsed = false;
  var resumeAt = -1;
  var resumePlay = false;
  /** @type {any} */
  var shakaPlayer = null;

  /** @param {string} id */
  function byId(id) {
    var element = document.getElementById(id);
    if (!element) throw new Error("the page has no #" + id);
    return element;
  }

  /** @param {string} url */
  function expiresAt(url) {
    var m = /[?&/]expires=(\d+)/.exec(url);
    return m ? Number(m[1]) * 1000 : 0;
  }

  /** @param {string} url */
  function baseOf(url) {
    var abs = new URL(url, location.href).href.split("?")[0] || "";
    return abs.slice(0, abs.lastIndexOf("/") + 1);
  }

  function play() {
    var p = video.play();
    if (p && p.catch) p.catch(function () {});
  }

  /** @param {string} message */
  function fail(message) {
    clearTimeout(timer);
    state.error = message;
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function schedule() {
    clearTimeout(timer);
    var expires = expiresAt(state.source);
    if (!expires) return;
    var remaining = expires - (Date.now() - skewMs);
    if (remaining <= 0) return; // already expired: the next 403 renews
    var delay = Math.max(remaining - LEAD_MS, Math.min(remaining / 2, MIN_DELAY_MS));
    timer = setTimeout(
      function () {
        if (delay > MAX_DAY_MS) schedule();
        else renew(false);
      },
      Math.min(delay, MAX_DAY_MS),
    );
  }

  /** @param {boolean} after403 */
  function renew(after403) {
    if (renewing) return;
    if (after403 && ++failed > MAX_FAILED) {
      fail("This video could not be loaded.");
      return;
    }
    renewing = true;
    clearTimeout(timer);
    fetch(config.renewUrl, { credentials: "same-origin", cache: "no-store", headers: { accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("renewal answered HTTP " + r.status);
        var date = Date.parse(r.headers.get("date") || "");
        if (!isNaN(date)) skewMs = Date.now() - date;
        return r.json();
      })
      .then(function (body) {
        if (!body || typeof body.playback_url !== "string" || body.playback_url === "") throw new Error("renewal gave no playback_url");
        renewing = false;
        if (typeof body.poster_url === "string" && body.poster_url !== "") video.poster = body.poster_url;
        state.renewals++;
        switchTo(body.playback_url);
      })
      .catch(function (e) {
        renewing = false;
        if (after403) fail("This video could not be loaded (" + e.message + ").");
        else
          timer = setTimeout(function () {
            renew(false);
          }, 10000);
      });
  }

  /** @param {string} url */
  function switchTo(url) {
    var at = video.currentTime;
    var playing = wantPlay && !video.ended;
    state.source = url;
    state.resumedAt = at;
    if (shakaPlayer) {
      loadShaka(url, at).then(function () {
        if (playing) play();
      }, onShakaError);
    } else if (hls) {
      resumeAt = at;
      resumePlay = playing;
      manifestParsed = false;
      hls.loadSource(url); // a new URL re-creates the MediaSource; MANIFEST_PARSED resumes at resumeAt
    } else {
      video.src = url;
      if (at > 0)
        video.addEventListener(
          "loadedmetadata",
          function () {
            video.currentTime = at;
          },
          { once: true },
        );
      if (playing) play();
    }
    schedule();
  }

  function startLoading() {
    if (!hls || !loadWanted || !manifestParsed) return;
    var at = resumeAt;
    var playing = resumePlay;
    resumeAt = -1;
    resumePlay = false;
    hls.startLoad(at);
    if (playing) play();
  }

  // A native player does not say why it fails: an error renews; a stall (Chromium stalls without an
  // error on a 403) asks the master playlist's URL, and renews when that answers 403.
  function probe() {
    if (renewing || probing) return;
    probing = true;
    fetch(state.source, { cache: "no-store" }).then(
      function (r) {
        probing = false;
        if (r.status === 403) renew(true);
      },
      function () {
        probing = false;
      },
    );
  }

  function startNative() {
    state.engine = "native";
    video.addEventListener("error", function () {
      var code = video.error ? video.error.code : 0;
      if (code === 2 || code === 4) renew(true);
      else fail("This video could not be played.");
    });
    video.addEventListener("stalled", probe);
    var lastTime = -1;
    var stuckSince = 0;
    setInterval(function () {
      if (video.paused || video.ended || video.currentTime !== lastTime) {
        lastTime = video.currentTime;
        stuckSince = 0;
      } else if (!stuckSince) {
        stuckSince = Date.now();
      } else if (Date.now() - stuckSince > STUCK_MS) {
        stuckSince = 0;
        probe();
      }
    }, 1000);
    video.src = state.source;
    schedule();
  }

  function startHls() {
    Hls = /** @type {any} */ (window).Hls;
    if (!Hls || !Hls.isSupported()) {
      if (video.canPlayType("application/vnd.apple.mpegurl") !== "") startNative();
      else fail("This browser cannot play this video.");
      return;
    }
    state.engine = "hls.js";
    hls = new Hls({ workerPath: config.hlsWorker, autoStartLoad: false });
    hls.on(Hls.Events.MANIFEST_PARSED, function () {
      manifestParsed = true;
      startLoading();
    });
    hls.on(Hls.Events.FRAG_LOADED, function () {
      failed = 0;
    });
    hls.on(Hls.Events.ERROR, function (/** @type {unknown} */ _event, /** @type {any} */ data) {
      var response = data.response;
      if (response && response.code === 403) {
        // hls.js does not retry a 4xx: it would try the other variants with the same expired token.
        var url = response.url || data.url || (data.frag && data.frag.url) || "";
        if (url && url.indexOf(baseOf(state.source)) !== 0) return; // a request of a previous source
        renew(true);
        return;
      }
      if (!data.fatal) return;
      if (data.type === Hls.ErrorTypes.MEDIA_ERROR && !mediaRecovered) {
        mediaRecovered = true;
        hls.recoverMediaError();
        return;
      }
      fail("This video could not be played.");
    });
    // Play may have been asked before this script loaded (a quick click, ?autoplay=1): then its
    // event has passed, and loading starts now.
    if (wantPlay || !video.paused) loadWanted = true;
    else
      video.addEventListener(
        "play",
        function () {
          loadWanted = true;
          startLoading();
        },
        { once: true },
      );
    hls.attachMedia(video);
    hls.loadSource(state.source);
    schedule();
  }

  /**
   * @param {string} url
   * @param {number} at
   */
  function loadShaka(url, at) {
    shakaPlayer.configure({ drm: { servers: { "org.w3.clearkey": baseOf(url) + "drm/clearkey" } } });
    return shakaPlayer.load(url, at > 0 ? at : null);
  }

  /**
   * @param {any} error
   * @returns {number}
   */
  function httpStatusOf(error) {
    // BAD_HTTP_STATUS (1001) carries the status second; a failed license request (6007) wraps one.
    if (!error) return 0;
    if (error.code === 1001 && error.data) return error.data[1];
    if (error.code === 6007 && error.data) return httpStatusOf(error.data[0]);
    return 0;
  }

  /** @param {any} error */
  function onShakaError(error) {
    if (error && error.code === 7000) return; // LOAD_INTERRUPTED: a renewal's load replaced this one
    if (httpStatusOf(error) === 403) {
      renew(true);
      return;
    }
    fail("This video could not be played." + (error && error.code ? " (" + error.code + ")" : ""));
  }

  function startShaka() {
    var shaka = /** @type {any} */ (window).shaka;
    if (!shaka) {
      fail("The player could not load.");
      return;
    }
    shaka.polyfill.installAll();
    if (!shaka.Player.isBrowserSupported()) {
      fail("This browser cannot play this video.");
      return;
    }
    state.engine = "shaka";
    shakaPlayer = new shaka.Player();
    shakaPlayer.addEventListener("error", function (/** @type {any} */ event) {
      onShakaError(event.detail);
    });
    shakaPlayer
      .attach(video)
      .then(function () {
        return loadShaka(state.source, 0);
      })
      .catch(onShakaError);
    schedule();
  }

  /**
   * @param {string} src
   * @param {() => void} then
   */
  function loadScript(src, then) {
    var script = document.createElement("script");
    script.src = src;
    script.onload = then;
    script.onerror = function () {
      fail("The player could not load.");
    };
    document.head.appendChild(script);
  }

  video.addEventListener("loadeddata", function () {
    failed = 0;
  });
  // The viewer's intent, which a renewal keeps: Chromium pauses the element itself on a media error.
  video.addEventListener("play", function () {
    wantPlay = true;
  });
  video.addEventListener("pause", function () {
    if (!video.error) wantPlay = false;
  });
  video.addEventListener("ended", function () {
    wantPlay = false;
  });

  var params = new URLSearchParams(location.search);
  var forced = params.get("engine");
  // ?autoplay=1 starts at once, muted (browsers play only muted media without a gesture) unless ?muted=0.
  if (params.get("autoplay") === "1" || params.get("autoplay") === "true") {
    state.autoplay = true;
    video.muted = params.get("muted") !== "0" && params.get("muted") !== "false";
    play();
  }
  var mse = typeof window.MediaSource === "function" && typeof window.MediaSource.isTypeSupported === "function";
  if (config.drm === "clearkey") {
    loadScript(config.shakaScript || "", startShaka);
  } else if (forced === "native" || (forced !== "hls.js" && !mse && video.canPlayType("application/vnd.apple.mpegurl") !== "")) {
    startNative();
  } else {
    loadScript(config.hlsScript, startHls);
  }
})();
