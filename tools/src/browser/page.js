// Runs in kyro's isolated world of the page (the DOM is shared, the page's scripts and globals are not). Called as (this function)(op, arg); returns a JSON string.
// `snapshot` walks the visible DOM into an accessibility-style outline and keeps a ref for
// every element one can act on; `locate` finds an element by ref or CSS selector, scrolls
// it into view and returns the point a real mouse click would hit; `focus` clears and
// focuses an editable element for typing. Same-origin iframes are walked as part of the
// page (their elements get refs, and a point inside one is given in the page's
// coordinates); a cross-origin iframe gets a `[frame=fK]` line, and kyro runs this script
// again in that frame's own world with the ref prefix `fK`.
(function (op, arg) {
  const clean = (s) => (s || "").replace(/\s+/g, " ").trim();
  const LEAF = new Set([
    "button", "link", "heading", "textbox", "searchbox", "checkbox", "radio", "img",
    "slider", "spinbutton", "option", "switch", "menuitem", "tab", "clickable",
  ]);
  const ACTIONABLE = new Set([
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox",
    "option", "slider", "spinbutton", "switch", "menuitem", "tab", "clickable",
  ]);
  const VALUED = new Set(["textbox", "searchbox", "combobox", "spinbutton", "slider"]);

  function hidden(el) {
    if (el.hidden || el.getAttribute("aria-hidden") === "true") return true;
    const style = el.ownerDocument.defaultView.getComputedStyle(el);
    return style.display === "none" || style.visibility === "hidden";
  }

  // Hidden by itself or by an ancestor.
  function visible(el) {
    if (el.checkVisibility) return el.checkVisibility({ visibilityProperty: true });
    return el.getClientRects().length > 0;
  }

  function roleOf(el) {
    const explicit = el.getAttribute("role");
    if (explicit) return explicit.trim().split(/\s+/)[0];
    const tag = el.tagName.toLowerCase();
    switch (tag) {
      case "a": return el.hasAttribute("href") ? "link" : null;
      case "button": return "button";
      case "input": {
        const type = (el.getAttribute("type") || "text").toLowerCase();
        if (type === "hidden") return null;
        if (["button", "submit", "reset", "image"].includes(type)) return "button";
        if (type === "checkbox") return "checkbox";
        if (type === "radio") return "radio";
        if (type === "range") return "slider";
        if (type === "number") return "spinbutton";
        if (type === "search") return "searchbox";
        return "textbox";
      }
      case "textarea": return "textbox";
      case "select": return el.multiple ? "listbox" : "combobox";
      case "option": return "option";
      case "img": return "img";
      case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
      case "ul": case "ol": return "list";
      case "li": return "listitem";
      case "nav": return "navigation";
      case "main": return "main";
      case "form": return "form";
      case "dialog": return "dialog";
      case "table": return "table";
      case "tr": return "row";
      case "td": return "cell";
      case "th": return "columnheader";
      case "header": return "banner";
      case "footer": return "contentinfo";
      case "aside": return "complementary";
    }
    if (el.isContentEditable && el.hasAttribute("contenteditable")) return "textbox";
    if (el.hasAttribute("onclick") || (el.hasAttribute("tabindex") && el.tabIndex >= 0)) return "clickable";
    return null;
  }

  function nameOf(el, role) {
    const label = el.getAttribute("aria-label");
    if (clean(label)) return clean(label);
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const text = by.split(/\s+/).map((id) => el.ownerDocument.getElementById(id))
        .filter(Boolean).map((e) => e.innerText || e.textContent).join(" ");
      if (clean(text)) return clean(text);
    }
    if (el.labels && el.labels.length) {
      const text = Array.from(el.labels).map((l) => l.innerText || l.textContent).join(" ");
      if (clean(text)) return clean(text);
    }
    const tag = el.tagName.toLowerCase();
    if (tag === "img") return clean(el.getAttribute("alt") || el.getAttribute("title"));
    if (tag === "input" && ["button", "submit", "reset"].includes(el.type)) return clean(el.value || el.type);
    if (VALUED.has(role) || role === "checkbox" || role === "radio" || role === "listbox") {
      return clean(el.getAttribute("placeholder") || el.getAttribute("title") || el.getAttribute("name"));
    }
    if (LEAF.has(role)) return clean(el.innerText || el.textContent || el.getAttribute("title")).slice(0, 200);
    return clean(el.getAttribute("title"));
  }

  // `prefix` names the frame for refs: "" in the page, "fK" in its Kth cross-origin frame
  // (which kyro reads in a world of that frame's own).
  // With `root` (a ref of the previous snapshot), the whole page is still walked (every
  // element gets its ref), and only that element's lines are returned.
  function snapshot(max, prefix, root) {
    const rootEl = root && window.__kyroRefs ? window.__kyroRefs.get(root) : null;
    if (root && !(rootEl && rootEl.isConnected)) return { missing: true };
    let rootLine = -1;
    let rootDepth = 0;
    const refs = new Map();
    const frames = [];
    const lines = [];
    let size = 0;
    let truncated = false;
    let next = 1;
    const emit = (depth, line) => {
      if (truncated) return;
      const text = "  ".repeat(depth) + line;
      if (size + text.length + 1 > max) { truncated = true; return; }
      lines.push(text);
      size += text.length + 1;
    };
    const walk = (node, depth) => {
      for (const child of node.childNodes) {
        if (truncated) return;
        if (child.nodeType === Node.TEXT_NODE) {
          const text = clean(child.textContent);
          if (text) emit(depth, "- text: " + JSON.stringify(text));
          continue;
        }
        if (child.nodeType !== Node.ELEMENT_NODE) continue;
        const tag = child.tagName.toLowerCase();
        if (["script", "style", "noscript", "template", "head", "meta", "link", "svg"].includes(tag)) continue;
        if (hidden(child)) continue;
        if (tag === "iframe" || tag === "frame") {
          const title = clean(child.getAttribute("title") || child.getAttribute("name"));
          let inner = null;
          try { inner = child.contentDocument; } catch (_) { /* cross-origin */ }
          const src = child.getAttribute("src") || "about:blank";
          if (inner && inner.body) {
            emit(depth, "- iframe" + (title ? " " + JSON.stringify(title) : "") + " [url=" + src + "]");
            walk(inner.body, depth + 1);
          } else {
            const head = "- iframe" + (title ? " " + JSON.stringify(title) : "") + " [url=" + src + "]";
            if (prefix === "") {
              frames.push(child);
              emit(depth, head + " [frame=f" + frames.length + "]");
            } else {
              emit(depth, head + " [cross-origin: not shown]");
            }
          }
          continue;
        }
        const role = roleOf(child);
        if (!role) {
          walk(child, depth);
          if (child.shadowRoot) walk(child.shadowRoot, depth);
          continue;
        }
        let line = "- " + role;
        const name = nameOf(child, role);
        if (name) line += " " + JSON.stringify(name);
        const attrs = [];
        if (role === "heading") {
          attrs.push("level=" + (child.getAttribute("aria-level") || tag.slice(1)));
        }
        if (role === "checkbox" || role === "radio" || role === "switch") {
          attrs.push(child.checked || child.getAttribute("aria-checked") === "true" ? "checked" : "unchecked");
        }
        if (child.disabled || child.getAttribute("aria-disabled") === "true") attrs.push("disabled");
        if (ACTIONABLE.has(role)) {
          const ref = prefix + "e" + next++;
          refs.set(ref, child);
          attrs.push("ref=" + ref);
        }
        if (role === "link") attrs.push("url=" + child.getAttribute("href"));
        if (child === rootEl && !truncated) {
          rootLine = lines.length;
          rootDepth = depth;
        }
        line += attrs.map((a) => " [" + a + "]").join("");
        if (VALUED.has(role) && "value" in child && child.value !== "") {
          line += ": " + JSON.stringify(child.type === "password" ? "••••" : String(child.value));
        }
        emit(depth, line);
        if (!LEAF.has(role)) {
          walk(child, depth + 1);
          if (child.shadowRoot) walk(child.shadowRoot, depth + 1);
        }
      }
    };
    if (document.body) walk(document.body, 0);
    window.__kyroRefs = refs;
    window.__kyroFrames = frames;
    if (rootEl) {
      if (rootLine < 0) return { unusable: "it is not part of the outline (hidden, or without a role)" };
      const indent = "  ".repeat(rootDepth);
      let end = rootLine + 1;
      while (end < lines.length && lines[end].startsWith(indent + "  ")) end++;
      const kept = lines.slice(rootLine, end).map((l) => l.slice(indent.length));
      return { snapshot: kept.join("\n"), refs: refs.size, frames: frames.length, truncated, url: location.href, title: document.title };
    }
    return { snapshot: lines.join("\n"), refs: refs.size, frames: frames.length, truncated, url: location.href, title: document.title };
  }

  function find(target) {
    if (target.ref !== undefined) {
      const el = window.__kyroRefs && window.__kyroRefs.get(target.ref);
      return el && el.isConnected ? { el } : { missing: true };
    }
    let el;
    try {
      el = document.querySelector(target.selector);
    } catch (e) {
      return { invalid: String(e.message || e) };
    }
    return el ? { el } : { missing: true };
  }

  function locate(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (!visible(el)) return { unusable: "it is hidden" };
    if (el.disabled) return { unusable: "it is disabled" };
    el.scrollIntoView({ block: "center", inline: "center" });
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return { unusable: "it has no size on the page" };
    const x = box.left + box.width / 2;
    const y = box.top + box.height / 2;
    const hit = el.ownerDocument.elementFromPoint(x, y);
    const labels = el.labels ? Array.from(el.labels) : [];
    if (hit && hit !== el && !el.contains(hit) && !labels.some((l) => l === hit || l.contains(hit))) {
      const what = hit.tagName.toLowerCase() + (hit.id ? "#" + hit.id : "");
      return { unusable: "it is covered by <" + what + ">" };
    }
    // From the element's frame out to the page: add each frame's content-box offset.
    let [px, py] = [x, y];
    for (let win = el.ownerDocument.defaultView; win && win.frameElement; win = win.parent) {
      const frame = win.frameElement;
      const outer = frame.getBoundingClientRect();
      const style = win.parent.getComputedStyle(frame);
      px += outer.left + frame.clientLeft + parseFloat(style.paddingLeft);
      py += outer.top + frame.clientTop + parseFloat(style.paddingTop);
    }
    return { x: px, y: py };
  }

  // The element's box in the page's document coordinates (for a screenshot of it).
  function box(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (!visible(el)) return { unusable: "it is hidden" };
    el.scrollIntoView({ block: "center", inline: "center" });
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0) return { unusable: "it has no size on the page" };
    let [x, y] = [rect.left, rect.top];
    for (let win = el.ownerDocument.defaultView; win && win.frameElement; win = win.parent) {
      const frame = win.frameElement;
      const outer = frame.getBoundingClientRect();
      x += outer.left + frame.clientLeft;
      y += outer.top + frame.clientTop;
    }
    return { x: x + window.scrollX, y: y + window.scrollY, width: rect.width, height: rect.height };
  }

  // The center of an element in the viewport, without scrolling (for a drag, whose two
  // ends must both be in view).
  function center(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (!visible(el)) return { unusable: "it is hidden" };
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return { unusable: "it has no size on the page" };
    const [x, y] = [box.left + box.width / 2, box.top + box.height / 2];
    if (x < 0 || y < 0 || x > window.innerWidth || y > window.innerHeight) {
      return { unusable: "it is outside the viewport (scroll it into view, or resize the browser)" };
    }
    return { x, y };
  }

  function focus(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (!visible(el)) return { unusable: "it is hidden" };
    if (el.disabled || el.readOnly) return { unusable: "it is not editable (disabled or read-only)" };
    const editable = el.isContentEditable ||
      el.tagName === "TEXTAREA" ||
      (el.tagName === "INPUT" && !["button", "submit", "reset", "image", "checkbox", "radio", "hidden", "file"].includes((el.type || "").toLowerCase()));
    if (!editable) return { unusable: "it does not take text (<" + el.tagName.toLowerCase() + ">)" };
    el.scrollIntoView({ block: "center", inline: "center" });
    el.focus();
    if (arg.clear) {
      if (el.isContentEditable) {
        el.textContent = "";
      } else {
        el.value = "";
      }
      el.dispatchEvent(new Event("input", { bubbles: true }));
    } else if (!el.isContentEditable && typeof el.value === "string") {
      try { el.setSelectionRange(el.value.length, el.value.length); } catch (_) { /* not a text input */ }
    }
    return { focused: el.ownerDocument.activeElement === el };
  }

  function value(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    return { value: el.isContentEditable ? el.textContent : String(el.value ?? "") };
  }

  // Chooses options of a <select> by value or visible label, as a user would, and fires
  // the `input` and `change` events the page listens for.
  function select(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (el.tagName !== "SELECT") return { unusable: "it is not a <select> (<" + el.tagName.toLowerCase() + ">)" };
    if (!visible(el)) return { unusable: "it is hidden" };
    if (el.disabled) return { unusable: "it is disabled" };
    const wanted = target.values;
    if (wanted.length > 1 && !el.multiple) {
      return { unusable: "it takes one option and " + wanted.length + " were given" };
    }
    const options = Array.from(el.options);
    const label = (o) => clean(o.label || o.textContent);
    const chosen = [];
    for (const w of wanted) {
      const o = options.find((o) => o.value === w) || options.find((o) => label(o) === clean(w));
      if (!o) {
        const known = options.slice(0, 20).map((o) => JSON.stringify(label(o))).join(", ");
        const more = options.length > 20 ? ", and " + (options.length - 20) + " more" : "";
        return { unusable: "it has no option " + JSON.stringify(w) + " (its options: " + known + more + ")" };
      }
      if (o.disabled) return { unusable: "its option " + JSON.stringify(w) + " is disabled" };
      chosen.push(o);
    }
    el.scrollIntoView({ block: "center", inline: "center" });
    el.focus();
    for (const o of options) o.selected = chosen.includes(o);
    el.dispatchEvent(new Event("input", { bubbles: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { values: Array.from(el.selectedOptions).map((o) => o.value) };
  }

  // Sets one form field as a person filling the form would leave it: text typed over,
  // a checkbox or radio checked or not ("true"/"false"), an option chosen; the page gets
  // `input` and `change`.
  function fill(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (!visible(el)) return { unusable: "it is hidden" };
    if (el.disabled) return { unusable: "it is disabled" };
    const tag = el.tagName;
    const type = (el.type || "").toLowerCase();
    if (tag === "SELECT") return select({ ...target, values: [arg.value] });
    if (tag === "INPUT" && (type === "checkbox" || type === "radio")) {
      if (arg.value !== "true" && arg.value !== "false") {
        return { unusable: "it is a " + type + ": its value is \"true\" or \"false\"" };
      }
      const want = arg.value === "true";
      if (type === "radio" && !want && el.checked) return { unusable: "a radio button is unchecked by checking another" };
      if (el.checked !== want) el.click();
      return { value: String(el.checked) };
    }
    const editable = el.isContentEditable || tag === "TEXTAREA" ||
      (tag === "INPUT" && !["button", "submit", "reset", "image", "hidden", "file"].includes(type));
    if (!editable || el.readOnly) return { unusable: "it does not take text (<" + tag.toLowerCase() + ">)" };
    el.scrollIntoView({ block: "center", inline: "center" });
    el.focus();
    if (el.isContentEditable) {
      el.textContent = arg.value;
    } else {
      const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), "value");
      if (setter && setter.set) setter.set.call(el, arg.value); else el.value = arg.value;
    }
    el.dispatchEvent(new Event("input", { bubbles: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { value: el.isContentEditable ? el.textContent : String(el.value) };
  }

  // Checks that the element takes files (`arg.count` of them), and keeps it for kyro to
  // hand the files to; afterwards (`arg.after`) says which files it holds.
  function fileInput(target) {
    const found = find(target);
    if (!found.el) return found;
    const el = found.el;
    if (el.tagName !== "INPUT" || (el.type || "").toLowerCase() !== "file") {
      return { unusable: "it is not a file input (<" + el.tagName.toLowerCase() + ">)" };
    }
    if (arg.after) return { files: Array.from(el.files || []).map((f) => f.name) };
    if (el.disabled) return { unusable: "it is disabled" };
    if (arg.count > 1 && !el.multiple) return { unusable: "it takes one file and " + arg.count + " were given" };
    window.__kyroFileInput = el;
    return { ready: true };
  }

  // For browser_verify_value: an input's, textarea's or select's value (a label stands for
  // its control), or with `arg.checked` whether a checkbox or radio is checked.
  function readValue(target) {
    const found = find(target);
    if (!found.el) return found;
    let el = found.el;
    if (el.tagName === "LABEL" && el.control) el = el.control;
    const tag = el.tagName.toLowerCase();
    const type = (el.type || "").toLowerCase();
    if (arg.checked) {
      if (tag === "input" && (type === "checkbox" || type === "radio")) return { value: el.checked };
      const aria = el.getAttribute("aria-checked");
      if (["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"].includes(roleOf(el)) && aria !== null) {
        return { value: aria === "true" ? true : aria === "mixed" ? "mixed" : false };
      }
      return { unusable: "it is not a checkbox or radio button (<" + tag + ">)" };
    }
    if (tag === "input" || tag === "textarea" || tag === "select") {
      return { value: String(el.value), secret: type === "password" };
    }
    return { unusable: "it is not an input, textarea or select (<" + tag + ">)" };
  }

  // For browser_verify_list_visible: each of `arg.items`, in order, in the smallest visible
  // element of the list whose text contains it (any case), at or after the previous item's.
  function listItems(target) {
    const found = find(target);
    if (!found.el) return found;
    const list = found.el;
    if (!visible(list)) return { unusable: "it is hidden" };
    const all = [list, ...list.querySelectorAll("*")].filter((el) => visible(el));
    const texts = new Map(all.map((el) => [el, clean(el.innerText || "").toLowerCase()]));
    const holds = (el, want) => (texts.get(el) || "").includes(want);
    const smallest = (i, want) => holds(all[i], want) && !Array.from(all[i].children).some((c) => holds(c, want));
    const matched = [];
    let from = 0;
    let previous = null;
    for (const item of arg.items) {
      const want = clean(item).toLowerCase();
      let at = -1;
      for (let i = from; i < all.length && at < 0; i++) if (smallest(i, want)) at = i;
      if (at < 0) {
        const anywhere = all.some((_, i) => smallest(i, want));
        return { failed: item, after: anywhere ? previous : null };
      }
      matched.push(clean(all[at].innerText || ""));
      from = at;
      previous = item;
    }
    return { matched };
  }

  // For browser_generate_locator: a Playwright locator for the element, unique in its
  // document: by role and accessible name, else by test id, by text, by CSS; a same-origin
  // frame's element is reached through its frame.
  function quote(s) {
    return "'" + s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n") + "'";
  }

  function cssPath(el) {
    const doc = el.ownerDocument;
    if (el.id && doc.querySelectorAll("#" + CSS.escape(el.id)).length === 1) return "#" + CSS.escape(el.id);
    const tag = el.tagName.toLowerCase();
    const parent = el.parentElement;
    if (!parent || tag === "body" || tag === "html") return tag;
    const siblings = Array.from(parent.children);
    const step = siblings.filter((c) => c.tagName === el.tagName).length === 1
      ? tag : tag + ":nth-child(" + (siblings.indexOf(el) + 1) + ")";
    return cssPath(parent) + " > " + step;
  }

  // A name Playwright's getByRole would match: not a field's taken from its `name` attribute.
  function ariaName(el, role) {
    const name = nameOf(el, role);
    if (!(VALUED.has(role) || ["checkbox", "radio", "listbox"].includes(role))) return name;
    const labelled = clean(el.getAttribute("aria-label")) || el.getAttribute("aria-labelledby") ||
      (el.labels && el.labels.length) || clean(el.getAttribute("placeholder")) || clean(el.getAttribute("title"));
    return name && !labelled && name === clean(el.getAttribute("name")) ? "" : name;
  }

  function locatorIn(el) {
    const doc = el.ownerDocument;
    const all = Array.from(doc.querySelectorAll("*")).filter((e) => visible(e));
    const only = (matches) => { const m = all.filter(matches); return m.length === 1 && m[0] === el; };
    const role = roleOf(el);
    if (role && role !== "clickable") {
      const name = ariaName(el, role);
      const lower = name.toLowerCase();
      const named = (exact) => (e) => {
        if (roleOf(e) !== role) return false;
        const n = ariaName(e, role);
        return exact ? n === name : n.toLowerCase().includes(lower);
      };
      if (!name && only((e) => roleOf(e) === role)) return "getByRole(" + quote(role) + ")";
      if (name && only(named(false))) return "getByRole(" + quote(role) + ", { name: " + quote(name) + " })";
      if (name && only(named(true))) return "getByRole(" + quote(role) + ", { name: " + quote(name) + ", exact: true })";
    }
    const testId = el.getAttribute("data-testid");
    if (testId && only((e) => e.getAttribute("data-testid") === testId)) return "getByTestId(" + quote(testId) + ")";
    const text = clean(el.innerText || "");
    if (text && text.length <= 80) {
      const texts = new Map(all.map((e) => [e, clean(e.innerText || "")]));
      const has = (e, exact) => {
        const t = texts.get(e);
        return t !== undefined && (exact ? t === text : t.toLowerCase().includes(text.toLowerCase()));
      };
      const smallest = (exact) => (e) => has(e, exact) && !Array.from(e.children).some((c) => has(c, exact));
      if (only(smallest(false))) return "getByText(" + quote(text) + ")";
      if (only(smallest(true))) return "getByText(" + quote(text) + ", { exact: true })";
    }
    return "locator(" + quote(cssPath(el)) + ")";
  }

  function locator(target) {
    const found = find(target);
    if (!found.el) return found;
    let el = found.el;
    let code = locatorIn(el);
    for (let win = el.ownerDocument.defaultView; win && win.frameElement; win = win.parent) {
      code = "locator(" + quote(cssPath(win.frameElement)) + ").contentFrame()." + code;
    }
    return { locator: code };
  }

  // The locator of the Kth cross-origin frame of the latest snapshot (its element, here).
  function frameLocator(index) {
    const frame = (window.__kyroFrames || [])[index - 1];
    if (!frame || !frame.isConnected) return { missing: true };
    return { locator: "locator(" + quote(cssPath(frame)) + ")" };
  }

  // A persistent outline over an element (`browser_highlight`), kept per element until
  // hidden; the overlay is aria-hidden, so the outline never lists it.
  function highlight(arg) {
    const marks = window.__kyroHighlights || (window.__kyroHighlights = new Map());
    for (const [el, mark] of marks) if (!el.isConnected || !mark.isConnected) marks.delete(el);
    if (arg.all) {
      const removed = marks.size;
      for (const mark of marks.values()) mark.remove();
      marks.clear();
      return { removed, shown: 0 };
    }
    const found = find(arg);
    if (!found.el) return found;
    const el = found.el;
    const old = marks.get(el);
    if (old) { old.remove(); marks.delete(el); }
    if (arg.hide) return { removed: old ? 1 : 0, shown: marks.size };
    if (!visible(el)) return { unusable: "it is hidden" };
    const doc = el.ownerDocument;
    const win = doc.defaultView;
    const box = el.getBoundingClientRect();
    const mark = doc.createElement("div");
    mark.setAttribute("aria-hidden", "true");
    mark.style.cssText = "position:absolute;pointer-events:none;z-index:2147483647;box-sizing:border-box;" +
      "outline:2px solid #f0f;background:rgba(255,0,255,0.12);" +
      "left:" + (box.left + win.scrollX) + "px;top:" + (box.top + win.scrollY) + "px;" +
      "width:" + box.width + "px;height:" + box.height + "px;" + (arg.style || "");
    doc.documentElement.appendChild(mark);
    marks.set(el, mark);
    return { removed: old ? 1 : 0, shown: marks.size };
  }


  // The video overlays (browser_video_chapter, browser_video_show_actions): fixed over the
  // viewport, aria-hidden (never in the outline), taking no pointer events (never in the
  // way of a click or of the check that an element is not covered), each in its own shadow
  // root (the page's CSS leaves them alone). The page's own timers remove them.
  function overlay(kind, css) {
    for (const old of document.querySelectorAll("[data-kyro-overlay=" + kind + "]")) old.remove();
    const host = document.createElement("div");
    host.setAttribute("aria-hidden", "true");
    host.setAttribute("data-kyro-overlay", kind);
    host.style.cssText = "position:fixed;inset:0;pointer-events:none;z-index:2147483647;";
    const root = host.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = css;
    root.appendChild(style);
    document.documentElement.appendChild(host);
    return [host, root];
  }
  function part(root, parent, id, text, css) {
    const el = document.createElement("div");
    el.id = id;
    if (text !== undefined) el.textContent = text;
    if (css) el.style.cssText += ";" + css;
    (parent || root).appendChild(el);
    return el;
  }

  // A full-screen chapter card: title, description, a blurred backdrop; it fades in, and
  // out after `duration` ms.
  function chapter(arg) {
    const fade = 300;
    const [host, root] = overlay("chapter",
      "@keyframes kin { from { opacity: 0 } to { opacity: 1 } }" +
      "@keyframes kout { from { opacity: 1 } to { opacity: 0 } }" +
      "#background { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;" +
      " backdrop-filter: blur(2px); background: rgba(0,0,0,0.15); animation: kin " + fade + "ms ease-out forwards }" +
      "#background.out { animation: kout " + fade + "ms ease-in forwards }" +
      "#content { background: rgba(0,0,0,0.7); border: 1px solid rgba(255,255,255,0.15); border-radius: 16px;" +
      " padding: 40px 56px; max-width: 560px; box-shadow: 0 8px 32px rgba(0,0,0,0.4); text-align: center;" +
      " font-family: system-ui, -apple-system, sans-serif }" +
      "#title { color: white; font-size: 28px; font-weight: 600; line-height: 1.3 }" +
      "#description { color: rgba(255,255,255,0.7); font-size: 15px; line-height: 1.5; margin-top: 12px }");
    const background = part(root, null, "background");
    const content = part(root, background, "content");
    part(root, content, "title", arg.title);
    if (arg.description) part(root, content, "description", arg.description);
    setTimeout(() => background.classList.add("out"), arg.duration);
    setTimeout(() => host.remove(), arg.duration + fade);
    return { shown: true, fade };
  }

  // An action's annotation: its title at `position`, with `style.point` a marker at the
  // action point, with `style.highlight` a box over the target; gone after `duration` ms.
  // With `cursor`, a pointer travels from where it was left to the action point in
  // `travel` ms, and stays there (`hide_cursor` removes it).
  function annotate(arg) {
    const style = arg.style || {};
    const [host, root] = overlay("action",
      "#title { position: absolute; margin: 16px; padding: 6px 12px; border-radius: 6px;" +
      " background: rgba(0,0,0,0.75); color: white; font: 14px/1.4 system-ui, -apple-system, sans-serif;" +
      " max-width: 60vw; white-space: nowrap; overflow: hidden; text-overflow: ellipsis }" +
      "#point { position: absolute; width: 0; height: 0; transform: translate(-50%, -50%) }" +
      "#box { position: absolute; box-sizing: border-box }");
    const [v, h] = arg.position.startsWith("bottom") ? ["bottom", arg.position.slice(6)] : ["top", arg.position.slice(3)];
    const across = h === "-left" ? "left:0" : h === "-right" ? "right:0" : "left:50%;transform:translateX(-50%)";
    part(root, null, "title", arg.title, v + ":0;" + across + ";" + (style.title || ""));
    if (arg.point && style.point) {
      part(root, null, "point", undefined, "left:" + arg.point[0] + "px;top:" + arg.point[1] + "px;" + style.point);
    }
    const found = arg.target && style.highlight ? find(arg.target) : {};
    if (found.el) {
      const b = found.el.getBoundingClientRect();
      part(root, null, "box", undefined, "left:" + b.left + "px;top:" + b.top + "px;width:" + b.width +
        "px;height:" + b.height + "px;" + style.highlight);
    }
    setTimeout(() => host.remove(), arg.duration);
    if (arg.cursor && arg.point) {
      let cursor = document.querySelector("[data-kyro-overlay=cursor]");
      const from = arg.last || arg.point;
      if (!cursor) {
        cursor = overlay("cursor", "svg { position: absolute; left: 0; top: 0; filter: drop-shadow(0 1px 2px rgba(0,0,0,0.5)) }")[0];
        cursor.shadowRoot.innerHTML += '<svg width="24" height="24" viewBox="0 0 24 24"><path d="M3 2 L3 19 L7.5 14.5 L10.5 21 L13 20 L10 13.5 L16.5 13.5 Z" fill="black" stroke="white" stroke-width="1.5"/></svg>';
        cursor.style.transform = "translate(" + (from[0] - 3) + "px," + (from[1] - 2) + "px)";
        cursor.getBoundingClientRect();
      }
      cursor.style.transition = "transform " + arg.travel + "ms ease-in-out";
      cursor.style.transform = "translate(" + (arg.point[0] - 3) + "px," + (arg.point[1] - 2) + "px)";
    }
    return { shown: true };
  }

  let result;
  switch (op) {
    case "highlight": result = highlight(arg); break;
    case "chapter": result = chapter(arg); break;
    case "annotate": result = annotate(arg); break;
    case "hide_cursor": {
      const cursors = document.querySelectorAll("[data-kyro-overlay=cursor]");
      for (const c of cursors) c.remove();
      result = { removed: cursors.length };
      break;
    }
    case "file_input": result = fileInput(arg); break;
    case "read_value": result = readValue(arg); break;
    case "list_items": result = listItems(arg); break;
    case "locator": result = locator(arg); break;
    case "frame_locator": result = frameLocator(arg.index); break;
    case "center": result = center(arg); break;
    case "fill": result = fill(arg); break;
    case "select": result = select(arg); break;
    case "viewport": result = { width: window.innerWidth, height: window.innerHeight }; break;
    case "text": result = { text: document.body ? document.body.innerText : "" }; break;
    case "snapshot": result = snapshot(arg.max, arg.prefix || "", arg.root); break;
    case "locate": result = locate(arg); break;
    case "box": result = box(arg); break;
    case "focus": result = focus(arg); break;
    case "value": result = value(arg); break;
    case "page": result = {
      url: location.href,
      title: document.title,
      status: (performance.getEntriesByType("navigation")[0] || {}).responseStatus || null,
    }; break;
    default: result = { invalid: "unknown operation " + op };
  }
  return JSON.stringify(result);
})
