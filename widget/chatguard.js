/*
 * <chatguard-chat>: the embeddable chat widget of chatguard. One classic script, no
 * dependencies, no build step. Embed it with two lines:
 *
 *   <script src="https://your.site/widget/chatguard.js" defer></script>
 *   <chatguard-chat></chatguard-chat>
 *
 * Safety rule of this file: text that came over the network (replies, headings, stored
 * turns) is only ever assigned with textContent, never parsed as HTML. Source links get an
 * href only when the page is a plain site path, so a reply cannot smuggle in a javascript:
 * URL.
 */
(function () {
  "use strict";

  var TAG = "chatguard-chat";
  if (!window.customElements || window.customElements.get(TAG)) return;

  // Captured now: document.currentScript is only set while this script first runs.
  var SCRIPT_URL = document.currentScript ? document.currentScript.src : location.href;

  var MAX_CHARS = 2000; // ChatRequest.message.maxLength in the HTTP contract
  var HISTORY_TURNS = 6; // ChatRequest.history.maxItems
  var PANEL_FILLS_SCREEN = "(max-width: 480px)"; // chatguard.css: the panel spans the width
  // The contract's body limit, in UTF-8 bytes, as the WAF size rule counts it: six turns of
  // 2,000 characters of CJK text, or of quotes and backslashes, pass it.
  var BODY_MAX_BYTES = 16384;
  var STORED_ENTRIES = 60; // what sessionStorage keeps for display; the rest is dropped
  var PAGE_PATTERN = /^\/[A-Za-z0-9\/._~-]*$/; // ChatRequest.page.pattern
  var SOURCE_PATTERN = /^\/(?!\/)[A-Za-z0-9\/._~%-]*$/; // a same-site path, nothing else
  // Keeps \t and \n (Shift+Enter) and drops other control characters the contract refuses.
  var CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

  // One friendly line per outcome; `notice` kinds are the widget's own words, never HTML.
  var NOTICES = {
    degraded: "Reduced service: here is the closest section of this site",
    paced: "Today's budget is paced: more is released at ",
    off: "The chat is switched off for now",
    limited: "Daily message limit reached",
    http400: "That message could not be sent as written. Please shorten or rephrase it.",
    http403: "The chat is not accepting messages from your connection right now. " +
      "Please wait a minute and try again.",
    http429: "The chat is busy right now. Please wait a moment and try again.",
    http503: "The chat is unavailable at the moment. Please try again later.",
    blockedSize: "This conversation has grown too long to send. " +
      "Your next message starts a new conversation.",
    blockedRate: "You have sent many messages in a short time. " +
      "Please wait a couple of minutes and try again.",
    network: "Could not reach the chat. Check your connection and try again.",
    timeout: "The answer took too long, so the widget stopped waiting. Please try again.",
    unexpected: "Something went wrong on our side. Please try again later.",
  };

  function slug(text) {
    return String(text).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
  }

  // A link only to a plain same-site path; anything else (javascript:, //host) stays text.
  // The anchor is the page's own id for the section, sent by the server; it is encoded, so
  // it can only ever be a fragment.
  function sourceLink(page, anchor, text) {
    if (!SOURCE_PATTERN.test(page)) return el("span", {}, text);
    return el("a", { href: page + (anchor ? "#" + encodeURIComponent(anchor) : "") }, text);
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      node.setAttribute(name, attrs[name]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Keeps only well-formed stored entries: sessionStorage is readable and writable by any
  // script on the page, so what comes back is validated like any other input.
  function cleanEntries(value) {
    if (!Array.isArray(value)) return [];
    return value.filter(function (e) {
      return e && typeof e === "object" && (e.role === "user" || e.role === "assistant") &&
        typeof e.content === "string" && typeof e.kind === "string";
    }).slice(-STORED_ENTRIES);
  }

  function cleanSources(value) {
    if (!Array.isArray(value)) return [];
    return value.filter(function (s) {
      return s && typeof s.page === "string" && typeof s.heading === "string";
    }).slice(0, 8).map(function (s) {
      return { page: s.page, heading: s.heading,
        anchor: typeof s.anchor === "string" ? s.anchor : null };
    });
  }

  // "Also see" pages of a degraded answer (DegradedAnswer.also): at most two, strings only.
  function cleanAlso(value) {
    if (!Array.isArray(value)) return [];
    return value.filter(function (a) {
      return a && typeof a.page === "string" && typeof a.title === "string";
    }).slice(0, 2).map(function (a) {
      return { page: a.page, title: a.title };
    });
  }

  // A reply as prose and code parts. A code block comes as a Markdown fence: a line of three
  // or more backticks, the code, then the same line (the contract's DegradedAnswer.reply;
  // a model may write them too). An unclosed fence runs to the end, as in CommonMark.
  function replyParts(text) {
    var parts = [];
    var prose = [];
    var code = null;
    var bar = "";
    String(text).split("\n").forEach(function (line) {
      var open = /^(`{3,})[^`]*$/.exec(line);
      if (code === null && open) {
        if (prose.length) parts.push({ kind: "prose", text: prose.join("\n").trim() });
        prose = [];
        code = [];
        bar = open[1];
      } else if (code !== null && line.trim() === bar) {
        parts.push({ kind: "code", text: code.join("\n") });
        code = null;
      } else if (code !== null) {
        code.push(line);
      } else {
        prose.push(line);
      }
    });
    if (code !== null) parts.push({ kind: "code", text: code.join("\n") });
    if (prose.join("").trim()) parts.push({ kind: "prose", text: prose.join("\n").trim() });
    return parts.filter(function (p) { return p.kind === "code" || p.text; });
  }

  // The history the contract accepts: completed, signed exchanges only (user turn followed
  // by its signed answer), newest last, at most HISTORY_TURNS turns. Notices, errors and
  // degraded sections are not model turns, so they are never sent back.
  function historyFrom(entries) {
    var turns = [];
    for (var i = 0; i + 1 < entries.length; i++) {
      var user = entries[i];
      var answer = entries[i + 1];
      if (user.role === "user" && answer.role === "assistant" && answer.kind === "answer" &&
          typeof answer.sig === "string" && answer.sig && user.content.length <= MAX_CHARS &&
          answer.content && answer.content.length <= MAX_CHARS) {
        turns.push({ role: "user", content: user.content });
        turns.push({ role: "assistant", content: answer.content, sig: answer.sig });
        i++;
      }
    }
    return turns.slice(-HISTORY_TURNS);
  }

  function utf8Bytes(text) {
    return new TextEncoder().encode(text).length;
  }

  // The request body within BODY_MAX_BYTES: the oldest exchanges (a user turn and its
  // answer) go first. The message alone always fits (2,000 UTF-16 units are at most
  // 6,000 bytes, 12,000 when every character is a quote or backslash).
  function fitBody(body, budget) {
    while (body.history.length && utf8Bytes(JSON.stringify(body)) > budget) {
      body.history = body.history.slice(2);
    }
    return body;
  }

  // The notice is already the entry's headline: a reply opening with the same words would
  // say it twice.
  function withoutLead(reply, notice) {
    if (reply.toLowerCase().indexOf(notice.toLowerCase()) !== 0) return reply;
    return reply.slice(notice.length).replace(/^[\s.:!\u2014-]+/, "");
  }

  // Maps one HTTP outcome to the entry the transcript shows.
  function entryFor(status, body) {
    var reply = body && typeof body.reply === "string" ? body.reply : "";
    if (status === 200 && body && body.limited === true) {
      return { role: "assistant", kind: "limited", notice: NOTICES.limited,
        content: reply || "You have used today's messages for this chat. Ask again tomorrow." };
    }
    // Switched off by the operator: no section follows, so not "reduced service".
    if (status === 200 && body && body.off === true) {
      return { role: "assistant", kind: "off", notice: NOTICES.off,
        content: withoutLead(reply, NOTICES.off) };
    }
    // Paced (the day's budget is released through the day): says when more comes, once.
    var paced = status === 200 && body && body.degraded === true &&
      /^\d{4}-\d\d-\d\dT(\d\d:\d\d)Z$/.exec(String(body.releasedAt));
    if (paced) {
      var rest = withoutLead(reply, NOTICES.degraded);
      var said = "Today's budget is released through the day; more is released at " +
        paced[1] + " UTC.";
      return { role: "assistant", kind: "paced", notice: NOTICES.paced + paced[1] + " UTC",
        content: withoutLead(rest, said), sources: cleanSources(body.sources),
        also: cleanAlso(body.also) };
    }
    if (status === 200 && body && body.degraded === true) {
      return { role: "assistant", kind: "degraded", notice: NOTICES.degraded,
        content: withoutLead(reply, NOTICES.degraded), sources: cleanSources(body.sources),
        also: cleanAlso(body.also) };
    }
    if (status === 200 && reply) {
      return { role: "assistant", kind: "answer", content: reply,
        sig: typeof body.sig === "string" ? body.sig : "", sources: cleanSources(body.sources) };
    }
    // A WAF block at the edge: its JSON names the rule, so the visitor learns what to do.
    if (status === 403 && body && body.blocked === "size") {
      return { role: "assistant", kind: "blocked-size", content: "",
        notice: NOTICES.blockedSize };
    }
    if (status === 403 && body && body.blocked === "rate") {
      return { role: "assistant", kind: "blocked-rate", content: "",
        notice: NOTICES.blockedRate };
    }
    var key = "http" + status;
    return { role: "assistant", kind: NOTICES[key] ? key : "unexpected", content: "",
      notice: NOTICES[key] || NOTICES.unexpected };
  }

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  var uid = 0;

  class ChatguardChat extends HTMLElement {
    connectedCallback() {
      if (this._root) return;
      this._id = "cg" + ++uid;
      this._entries = [];
      this._historyStart = 0; // entries before it are never sent back (after a size block)
      this._busy = false;
      this._root = this.attachShadow({ mode: "open" });
      this._build();
      this._restore();
    }

    disconnectedCallback() {
      this._cancel();
    }

    // Drops the exchange in flight: its answer, if it still comes, is not shown.
    _cancel() {
      var controller = this._abort;
      this._abort = null;
      if (controller) controller.abort();
      if (this._busy) this._setBusy(false);
    }

    get endpoint() {
      return this.getAttribute("endpoint") || "/chat";
    }

    get timeoutMs() {
      var seconds = parseFloat(this.getAttribute("timeout"));
      return (isFinite(seconds) && seconds > 0 ? seconds : 30) * 1000;
    }

    // A deployment with a smaller body_max_bytes says so here; never more than the contract.
    get bodyMaxBytes() {
      var bytes = parseInt(this.getAttribute("body-max-bytes"), 10);
      return bytes > 0 && bytes < BODY_MAX_BYTES ? bytes : BODY_MAX_BYTES;
    }

    get storageKey() {
      return this.getAttribute("storage-key") || "chatguard:" + this.endpoint;
    }

    _build() {
      var id = this._id;
      var css = this.getAttribute("stylesheet") || new URL("chatguard.css", SCRIPT_URL).href;
      var heading = this.getAttribute("heading") || "Ask this site";
      this._root.append(el("link", { rel: "stylesheet", href: css }));

      this._launcher = el("button", { type: "button", class: "launcher", part: "launcher",
        "aria-expanded": "false", "aria-controls": id + "-panel" },
        this.getAttribute("label") || "Chat with this site");

      var panel = (this._panel = el("section", { id: id + "-panel", class: "panel",
        part: "panel", role: "dialog", "aria-modal": "false", "aria-labelledby": id + "-title",
        hidden: "" }));
      var header = el("div", { class: "header" });
      header.append(el("h2", { id: id + "-title", class: "title" }, heading));
      this._clear = el("button", { type: "button", class: "ghost" }, "New chat");
      this._close = el("button", { type: "button", class: "ghost close",
        "aria-label": "Close chat" }, "\u00d7");
      header.append(this._clear, this._close);

      this._log = el("div", { class: "log", role: "log", "aria-live": "polite",
        "aria-relevant": "additions", "aria-label": "Conversation", tabindex: "0" });
      this._status = el("p", { class: "status", role: "status", "aria-live": "polite" });

      var form = (this._form = el("form", { class: "composer", novalidate: "" }));
      var label = el("label", { for: id + "-input", class: "visually-hidden" }, "Your message");
      this._input = el("textarea", { id: id + "-input", rows: "2", maxlength: String(MAX_CHARS),
        placeholder: this.getAttribute("placeholder") || "Ask a question about this site",
        "aria-describedby": id + "-hint " + id + "-count" });
      var meta = el("div", { class: "meta" });
      meta.append(
        el("span", { id: id + "-hint", class: "hint" }, "Enter to send, Shift+Enter for a new line"),
        (this._count = el("span", { id: id + "-count", class: "count" }, "0 / " + MAX_CHARS)),
      );
      this._send = el("button", { type: "submit", class: "send" }, "Send");
      form.append(label, this._input, this._send, meta);
      panel.append(header, this._log, this._status, form);
      this._root.append(this._launcher, panel);
      this._wire();
    }

    _wire() {
      var self = this;
      this._launcher.addEventListener("click", function () {
        self._setOpen(self._panel.hidden);
      });
      this._close.addEventListener("click", function () {
        self._setOpen(false);
      });
      this._clear.addEventListener("click", function () {
        self._reset();
      });
      this._form.addEventListener("submit", function (event) {
        event.preventDefault();
        self._submit();
      });
      this._input.addEventListener("input", function () {
        self._updateCount();
      });
      this._input.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          self._submit();
        }
      });
      this._panel.addEventListener("keydown", function (event) {
        if (event.key === "Escape") {
          event.preventDefault();
          self._setOpen(false);
        }
      });
    }

    _setOpen(open) {
      this._panel.hidden = !open;
      this._launcher.setAttribute("aria-expanded", String(open));
      this._save();
      if (open) {
        this._input.focus();
        this._scrollToEnd();
      } else {
        this._launcher.focus();
      }
    }

    _updateCount() {
      var length = this._input.value.length;
      this._count.textContent = length + " / " + MAX_CHARS;
      this._count.classList.toggle("near", length >= MAX_CHARS - 100);
    }

    _load() {
      try {
        return JSON.parse(window.sessionStorage.getItem(this.storageKey) || "null");
      } catch (error) {
        return null; // storage disabled or corrupt: start a fresh conversation
      }
    }

    _save() {
      try {
        window.sessionStorage.setItem(this.storageKey, JSON.stringify({
          open: !this._panel.hidden, entries: this._entries.slice(-STORED_ENTRIES) }));
      } catch (error) {
        // Storage full or disabled: the conversation still works for this page view.
      }
    }

    _restore() {
      var saved = this._load() || {};
      this._entries = cleanEntries(saved.entries);
      this._entries.forEach(this._render, this);
      var open = saved.open === true || (saved.open === undefined && this.hasAttribute("open"));
      this._panel.hidden = !open;
      this._launcher.setAttribute("aria-expanded", String(open));
      if (open) this._scrollToEnd();
    }

    _reset() {
      this._cancel();
      this._entries = [];
      this._historyStart = 0;
      this._log.replaceChildren();
      this._save();
      this._input.focus();
    }

    _push(entry) {
      this._entries.push(entry);
      this._save();
      var item = this._render(entry);
      if (entry.role !== "assistant") return this._scrollToEnd();
      // A long reply is read from its start: show the question and the reply's first lines
      // rather than the log's end (scrollTo clamps, so a short reply ends at the bottom).
      var question = item.previousElementSibling;
      var top = item.offsetTop - 12;
      if (question) top = Math.max(question.offsetTop - 12, top - this._log.clientHeight / 3);
      this._scrollTo(top);
    }

    _render(entry) {
      var item = el("div", { class: "msg " + entry.role + " " + entry.kind });
      item.append(el("span", { class: "visually-hidden" },
        entry.role === "user" ? "You said: " : "Answer: "));
      if (entry.notice) item.append(el("p", { class: "notice" }, entry.notice));
      // Code keeps its line breaks in <pre><code>, set with textContent like all the rest:
      // markup inside a code block is shown as text, never run.
      replyParts(entry.content || "").forEach(function (part) {
        if (part.kind === "prose") return item.append(el("p", { class: "text" }, part.text));
        var pre = el("pre", { class: "code", tabindex: "0" });
        pre.append(el("code", {}, part.text));
        item.append(pre);
      });
      var sources = cleanSources(entry.sources);
      if (sources.length) item.append(this._sourceList(sources));
      var also = cleanAlso(entry.also);
      if (also.length) item.append(this._alsoList(also));
      this._log.append(item);
      return item;
    }

    // One line per cited page: the page title, then the cited sections of it. A source's
    // heading is its trail ("Page > Section > Sub"); the last part names the section.
    _sourceList(sources) {
      var list = el("ul", { class: "sources", "aria-label": "Sources" });
      var lines = {};
      sources.forEach(function (source) {
        var trail = source.heading.split(" > ");
        var line = lines[source.page];
        if (!line) {
          line = lines[source.page] = { li: el("li"), sections: {} };
          line.li.append(sourceLink(source.page, "", trail[0] || source.page));
          list.append(line.li);
        }
        var section = trail.length > 1 ? trail[trail.length - 1] : "";
        if (section && !line.sections[section]) {
          line.li.append(document.createTextNode(Object.keys(line.sections).length ? ", " : ": "));
          // The page's own anchor when the server sends one ("" = the page has none);
          // a reply without one (an older server) links the section's slug, as before.
          var anchor = source.anchor === null ? slug(section) : source.anchor;
          line.li.append(sourceLink(source.page, anchor, section));
          line.sections[section] = true;
        }
      });
      // On a phone the open panel fills the screen: following a source closes it first
      // (and remembers it closed), so the section the link scrolls to is not under it.
      var self = this;
      list.addEventListener("click", function (event) {
        if (event.target.closest("a") && window.matchMedia(PANEL_FILLS_SCREEN).matches) {
          self._setOpen(false);
        }
      });
      return list;
    }

    // "Also see": the next pages for the question, each a link to a same-site path.
    _alsoList(also) {
      var line = el("p", { class: "also" }, "Also see: ");
      also.forEach(function (page, n) {
        if (n) line.append(document.createTextNode(", "));
        line.append(sourceLink(page.page, "", page.title || page.page));
      });
      return line;
    }

    _scrollToEnd() {
      this._scrollTo(this._log.scrollHeight);
    }

    _scrollTo(top) {
      this._log.scrollTo({ top: top, behavior: reducedMotion() ? "auto" : "smooth" });
    }

    _setBusy(busy) {
      this._busy = busy;
      this._send.disabled = busy;
      this._log.setAttribute("aria-busy", String(busy));
      this._status.textContent = busy ? "Waiting for the answer\u2026" : "";
      this._status.classList.toggle("busy", busy);
    }

    _submit() {
      var message = this._input.value.replace(CONTROL, "").trim();
      // A lone surrogate (half an emoji) is refused by the server: make the text well formed.
      if (message.toWellFormed) message = message.toWellFormed();
      if (this._busy || !message) return;
      var history = historyFrom(this._entries.slice(this._historyStart));
      this._push({ role: "user", kind: "question", content: message });
      this._input.value = "";
      this._updateCount();
      this._exchange(message, history);
    }

    async _exchange(message, history) {
      var body = { message: message, history: history };
      if (PAGE_PATTERN.test(location.pathname) && location.pathname.length <= 256) {
        body.page = location.pathname;
      }
      fitBody(body, this.bodyMaxBytes);
      var controller = (this._abort = new AbortController());
      var timedOut = false;
      var timer = setTimeout(function () {
        timedOut = true;
        controller.abort();
      }, this.timeoutMs);
      this._setBusy(true);
      var entry;
      try {
        var response = await fetch(this.endpoint, { method: "POST", body: JSON.stringify(body),
          headers: { "Content-Type": "application/json", Accept: "application/json" },
          credentials: "omit", cache: "no-store", signal: controller.signal });
        var data = null;
        try {
          data = await response.json();
        } catch (error) {
          data = null; // a non-JSON body (a proxy's error page) is an unexpected outcome
        }
        entry = entryFor(response.status, data);
      } catch (error) {
        entry = { role: "assistant", kind: "network", content: "", notice: NOTICES.network };
      } finally {
        clearTimeout(timer);
      }
      if (controller !== this._abort) return; // "New chat" or removal dropped this exchange
      if (timedOut) entry = { role: "assistant", kind: "timeout", content: "",
        notice: NOTICES.timeout };
      this._abort = null;
      this._setBusy(false);
      this._push(entry);
      // Resending the same history would be blocked again: later messages start afresh.
      if (entry.kind === "blocked-size") this._historyStart = this._entries.length;
      var served = ["answer", "degraded", "paced", "limited", "off"];
      if (served.indexOf(entry.kind) < 0 && !this._input.value) {
        this._input.value = message; // let the visitor retry without retyping
        this._updateCount();
      }
    }
  }

  window.customElements.define(TAG, ChatguardChat);
})();
