/* paperfeeds: search in the browser, over the static files alone. The index is Pagefind's
   (search/, listed by search/index.json): the topics' index, with Pagefind's runtime, and
   one index per part of the papers' history, each holding an English and a Chinese record
   of every paper (feeds/publish/search.py). A query is asked of the records of its script:
   the Chinese ones when it has a Chinese character (Pagefind splits it into words in the
   browser, with Intl.Segmenter, as it split those records when it built them), else the
   English ones (Pagefind stems both the query and the records). */
(function () {
  "use strict";
  var form = document.getElementById("search");
  var input = document.getElementById("q");
  var status = document.getElementById("search-status");
  var list = document.getElementById("results");
  var more = document.getElementById("more");
  var topicsFound = document.getElementById("topics-found");
  var topicList = document.getElementById("topics");
  if (!form || !input || !status || !list || !more || !topicsFound || !topicList) {
    return;
  }
  var root = new URL(".", document.baseURI); // search.html is at the site's root
  var PAGE = 10; // results shown at a time
  var HAN = /\p{Script=Han}/u;
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

  // Every index is one "part" of the search, named in a filter that all its pages have
  // (Pagefind's mergeFilter): "topics", or a language and a folder ("en p/1-500-…"). Parts
  // are what a search is limited to: those of the query's language, those holding its words.
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
        await pagefind.options({
          baseUrl: base, excerptLength: 24, metaCacheTag: manifest.primary,
          mergeFilter: { part: "topics" }
        });
        var parts = { en: ["topics"], zh: [] };
        var merged = [];
        manifest.shards.forEach(function (shard) {
          (shard.languages || []).forEach(function (language) {
            var name = language + " " + shard.dir;
            (parts[language] = parts[language] || []).push(name);
            merged.push(pagefind.mergeIndex(base + "search/" + shard.dir + "/", {
              language: language, baseUrl: base, metaCacheTag: shard.dir,
              mergeFilter: { part: name }
            }));
          });
        });
        await Promise.all(merged);
        return { pagefind: pagefind, parts: parts };
      })();
      loading.catch(function () {
        loading = null; // tried again on the next search
      });
    }
    return loading;
  }

  function fold(text) {
    return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
  }

  // True when a text holds a word of a query: Chinese as written, anywhere (the words
  // Pagefind split it into may differ from the browser's); any other word as the start of
  // one of the text's, whole or but for an ending of up to three letters
  // ("decodings" is held by "decoding", "zebra" is not by "Z.").
  function holds(text, word) {
    word = fold(word).replace(/[^\p{L}\p{N}]/gu, "");
    text = fold(text);
    if (HAN.test(word)) {
      return text.replace(/[^\p{L}\p{N}]/gu, "").indexOf(word) >= 0;
    }
    var need = word.length <= 4 ? word.length : Math.max(4, word.length - 3);
    var words = text.split(/[^\p{L}\p{N}]+/u).concat(
      text.split(/\s+/).map(function (w) { return w.replace(/[^\p{L}\p{N}]/gu, ""); }));
    return words.some(function (w) {
      var same = 0;
      while (same < word.length && w[same] === word[same]) {
        same++;
      }
      return same >= need;
    });
  }

  function partsCounted(found) {
    return (found.filters && found.filters.part) || {};
  }

  // True when the best answers of one part to a word alone hold it.
  async function answersHold(pagefind, word, part) {
    var found = await pagefind.search(word, { filters: { part: part } });
    var best = await Promise.all(found.results.slice(0, 3).map(function (r) { return r.data(); }));
    return best.some(function (data) {
      var meta = data.meta || {};
      var text = [data.content || ""].concat(Object.keys(meta).map(function (k) {
        return meta[k];
      }));
      return holds(text.join(" "), word);
    });
  }

  // Return the parts that hold every word. Pagefind answers a word that no page of an
  // index has with the pages of its longest prefix that one has (its PR #315, for words
  // typed halfway: "installa" finds "installation"), so "zebra" found an author's initial
  // "Z."; and each part does so on its own. So each word is asked alone first: a part holds
  // it where Pagefind finds the word itself (quoted: its own stemming, no prefixes), or
  // where its best answers hold it (a word being typed).
  async function partsHolding(pagefind, words, parts) {
    for (var i = 0; i < words.length && parts.length; i++) {
      var within = { filters: { part: { any: parts } } };
      var word = words[i];
      var found = await Promise.all([pagefind.search("\"" + word + "\"", within),
        pagefind.search(word, within)]);
      var exact = partsCounted(found[0]);
      var loose = partsCounted(found[1]);
      var held = await Promise.all(parts.map(function (part) {
        return exact[part] > 0 || (loose[part] > 0 && answersHold(pagefind, word, part));
      }));
      parts = parts.filter(function (_part, n) { return held[n]; });
    }
    return parts;
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

  function link(data) {
    var a = document.createElement("a");
    // A Chinese record's URL is its page's with #zh (see search.py).
    var url = String(data.url || "").split("#")[0];
    a.href = url.indexOf(root.pathname) === 0 ? url : root.pathname;
    a.textContent = (data.meta || {}).title || url;
    return a;
  }

  function line(item, element) {
    item.appendChild(document.createElement("br"));
    item.appendChild(element);
  }

  // The line under a paper: Pagefind's excerpt of its record's first section, the summary
  // or abstract (a Chinese record's title and institutions follow it under a heading, the
  // anchor #more: see search.py). Where the words found are only in those, the summary's
  // beginning, which the heading's text ends in the record's content.
  function summaryLine(data) {
    var summary = (data.sub_results || []).filter(function (sub) {
      return !/#more$/.test(sub.url);
    })[0];
    var anchor = (data.anchors || [])[0];
    if (summary || !anchor) {
      return summary ? summary.excerpt : data.excerpt;
    }
    var text = (data.content || "").split(" " + anchor.text + " ")[0];
    text = text.length > 60 ? text.slice(0, 60) + "…" : text;
    return text.replace(/</g, "&lt;").replace(/>/g, "&gt;"); // as Pagefind's excerpts are
  }

  // A paper: its title, Chinese title, first authors and venue, and a line of its summary
  // or abstract around the words found.
  function row(data) {
    var item = document.createElement("li");
    var meta = data.meta || {};
    item.appendChild(link(data));
    if (meta.zh) {
      var zh = span("", meta.zh);
      zh.lang = "zh";
      line(item, zh);
    }
    var authors = meta.authors ? meta.authors.split(", ") : [];
    var who = authors.slice(0, 3).join(", ") + (authors.length > 3 ? " et al." : "");
    var about = [who, meta.venue].filter(Boolean).join(" · ");
    if (about) {
      line(item, span("au", about));
    }
    var summary = summaryLine(data);
    if (summary) {
      var text = span("sum", "");
      excerpt(text, summary);
      if (HAN.test(text.textContent)) {
        text.lang = "zh";
      }
      line(item, text);
    }
    return item;
  }

  function topicRow(data) {
    var item = document.createElement("li");
    item.appendChild(link(data));
    if (data.excerpt) {
      var text = span("sum", "");
      excerpt(text, data.excerpt);
      item.appendChild(document.createTextNode(" "));
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
    topicList.textContent = "";
    topicsFound.hidden = true;
    more.hidden = true;
    results = [];
    shownCount = 0;
    if (!query) {
      say("");
      return;
    }
    say("Searching…");
    var index;
    try {
      index = await load();
    } catch (e) {
      say(unavailable(e && e.message ? e.message : "its index could not be read"));
      return;
    }
    var pagefind = index.pagefind;
    var words = query.replace(/"/g, " ").split(/\s+/).filter(function (w) {
      return /[\p{L}\p{N}]/u.test(w);
    });
    var parts = await partsHolding(pagefind, words, index.parts[HAN.test(query) ? "zh" : "en"]);
    var papers = parts.filter(function (part) { return part !== "topics"; });
    var found = papers.length
      ? (await pagefind.search(query, { filters: { part: { any: papers } } })).results : [];
    var topics = parts.indexOf("topics") >= 0
      ? (await pagefind.search(query, { filters: { part: "topics" } })).results : [];
    var topicData = await Promise.all(topics.map(function (r) { return r.data(); }));
    if (mine !== latest) {
      return;
    }
    results = found;
    // Papers are the answer; a topic that matches is a section of its own, below them.
    topicData.forEach(function (data) { topicList.appendChild(topicRow(data)); });
    topicsFound.hidden = !topicData.length;
    if (!results.length) {
      say((topicData.length ? "No papers for “" : "Nothing found for “") + query + "”.");
      return;
    }
    say(results.length + (results.length === 1 ? " paper" : " papers") + " for “" + query + "”.");
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
