/* paperfeeds: copy buttons beside the feed addresses and a paper's BibTeX. Without
   JavaScript the buttons stay hidden and the text is there to select. */
(function () {
  "use strict";

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var done = false;
      try {
        done = document.execCommand("copy");
      } catch (e) {
        done = false;
      }
      document.body.removeChild(area);
      if (done) {
        resolve();
      } else {
        reject();  // the browser refused: the text is selected instead
      }
    });
  }

  function select(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) {
      return;
    }
    var box = button.closest("section");
    var what = button.getAttribute("data-what");
    var status = box ? box.querySelector(".copied") : null;
    function say(text) {
      if (status) {
        status.textContent = text;
      }
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = source.textContent.trim();
      copyText(text).then(
        function () {
          say("Copied " + (what || text));
        },
        function () {
          select(source);
          say("Selected: press Ctrl+C (⌘C on a Mac) to copy " + (what || "the address") + ".");
        }
      );
    });
  });
})();
