/* paperfeeds: search in the browser, over the static files alone. The index is Pagefind's
   (search/): the topics' index, with one index per part of the papers' history merged in
   at query time (search/index.json lists them). Chinese queries are split into words by
   the browser (Intl.Segmenter), as the index was at build time. */
(function () {
  "use strict";
  var form = document.getElementById("search");
  var input = document.getElementById("q");
  var status = document.getElementById("search-status");
  var list = document.getElementById("results");
  var more = document.getElementById("more");
  if (!form || !input || !status || !list || !more) {
    return;
  }
  var root = new URL(".", document.baseURI); // search.html is at the site's root
  var PAGE = 10; // results shown at a time
  var loading = null;
  var results = [];
  var shownCount = 0;
  var latest = 0; // the newest search: an older one that finishes late shows nothing

  function say(text) {
    status.textContent = text;
  }

  function unavailable(why) {
    if (location.protocol === "file:") {
      return "Search needs the site served over HTTP (any static host, or `feeds serve`): "
        + "opened as files, the browser does not let it read its index. "
        + "Browse the topics or every paper instead.";
    }
    return "Search is not available on this copy of the site (" + why + "). "
      + "Browse the topics or every paper instead.";
  }

  function load() {
    if (!loading) {
      loading = (async function () {
        var answer = await fetch(new URL("search/index.json", root), { cache: "no-cache" });
        if (!answer.ok) {
          throw new Error("it was published without a search index");
        }
        var manifest = await answer.json();
        // The primary index (the topics') holds Pagefind's runtime; every folder of the
        // index is written once under a new name, so its files may be cached.
        var primary = new URL("search/" + manifest.primary + "/pagefind.js", root).href;
        var pagefind = await import(primary);
        var base = root.pathname;
        await pagefind.options({ baseUrl: base, excerptLength: 24, metaCacheTag: manifest.primary });
        // Papers are indexed as Chinese text (English words are words there too): each part
        // of the history is merged with that language, so queries are segmented alike.
        await Promise.all(manifest.shards.map(function (shard) {
          return pagefind.mergeIndex(base + "search/" + shard.dir + "/", {
            language: "zh", baseUrl: base, metaCacheTag: shard.dir
          });
        }));
        return pagefind;
      })();
      loading.catch(function () {
        loading = null; // tried again on the next search
      });
    }
    return loading;
  }

  function span(className, text) {
    var element = document.createElement("span");
    if (className) {
      element.className = className;
    }
    element.textContent = text;
    return element;
  }

  // Pagefind's excerpt is the text with `<` and `>` escaped and <mark> around the words
  // found: rebuilt as text nodes and <mark> elements, never parsed as HTML.
  function excerpt(into, html) {
    var marked = false;
    html.split(/(<mark>|<\/mark>)/).forEach(function (piece) {
      if (piece === "<mark>" || piece === "</mark>") {
        marked = piece === "<mark>";
        return;
      }
      var text = piece.replace(/&lt;/g, "<").replace(/&gt;/g, ">");
      if (!text) {
        return;
      }
      if (marked) {
        var mark = document.createElement("mark");
        mark.textContent = text;
        into.appendChild(mark);
      } else {
        into.appendChild(document.createTextNode(text));
      }
    });
  }

  function row(data) {
    var item = document.createElement("li");
    var meta = data.meta || {};
    var link = document.createElement("a");
    var url = String(data.url || "");
    link.href = url.indexOf(root.pathname) === 0 ? url : root.pathname;
    link.textContent = meta.title || url;
    item.appendChild(link);
    if (meta.zh) {
      item.appendChild(document.createElement("br"));
      var zh = span("", meta.zh);
      zh.lang = "zh";
      item.appendChild(zh);
    }
    if (meta.info) {
      item.appendChild(document.createElement("br"));
      item.appendChild(span("meta", meta.info));
    }
    if (data.excerpt) {
      item.appendChild(document.createElement("br"));
      var text = span("sum", "");
      excerpt(text, data.excerpt);
      item.appendChild(text);
    }
    return item;
  }

  async function showMore(search) {
    var batch = results.slice(shownCount, shownCount + PAGE);
    shownCount += batch.length;
    var found = await Promise.all(batch.map(function (result) { return result.data(); }));
    if (search !== latest) {
      return;
    }
    found.forEach(function (data) { list.appendChild(row(data)); });
    more.hidden = shownCount >= results.length;
  }

  async function search(query) {
    var mine = ++latest;
    query = query.trim();
    list.textContent = "";
    more.hidden = true;
    results = [];
    shownCount = 0;
    if (!query) {
      say("");
      return;
    }
    say("Searching…");
    var pagefind;
    try {
      pagefind = await load();
    } catch (e) {
      say(unavailable(e && e.message ? e.message : "its index could not be read"));
      return;
    }
    var found = await pagefind.search(query);
    if (mine !== latest) {
      return;
    }
    results = found.results;
    if (!results.length) {
      say("Nothing found for “" + query + "”.");
      return;
    }
    say(results.length + (results.length === 1 ? " result" : " results") + " for “" + query + "”.");
    await showMore(mine);
  }

  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { search(input.value); }, 250);
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(timer);
    var url = new URL(location.href);
    url.searchParams.set("q", input.value.trim());
    history.replaceState(null, "", url);
    search(input.value);
  });
  more.addEventListener("click", function () { showMore(latest); });
  var asked = new URLSearchParams(location.search).get("q");
  if (asked) {
    input.value = asked;
    search(asked);
  }
})();
