"""Alerts: composing a message, `${NAME}` secrets, when a message is due, and delivering it
through Apprise to real servers on 127.0.0.1 (SMTP by aiosmtpd, a JSON webhook over HTTP)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from html.parser import HTMLParser

import pytest
from apprise import Apprise, NotifyFormat
from apprise.conversion import convert_between

from feeds.alerts import deliver as deliver_module
from feeds.alerts.deliver import Delivery, deliver, describe, send_test
from feeds.alerts.due import AlertState, after_delivery, due_at, is_due
from feeds.alerts.env import AlertsConfigError, MissingVariable, expand
from feeds.alerts.message import NewPaper, compose
from feeds.errors import ConfigError
from feeds.model import Hit, Link, Paper
from feeds.net.pacing import backoff
from feeds.publish.view import Site
from tests.linkserver import LinkServer, _Handler, send
from tests.mailserver import MailServer

SITE = Site(title="paperfeeds", base_url="https://papers.example.org/")
NOW = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)
SECRET = "s3cr3t-Passw0rd"
TOKEN = "t0ken-9f8e7d6c5b4a"


def new(
    n: int,
    topic: str = "speculative-decoding",
    title: str = "Speculative decoding",
    *,
    hours_ago: int = 0,
) -> NewPaper:
    return NewPaper(
        paper=Paper(f"p{n}", f"Paper number {n}", authors=("Ann Lee", "Bo Chen")),
        topic_id=topic,
        topic_title=title,
        entered=NOW - timedelta(hours=hours_ago),
        links=(Link("https://arxiv.org/abs/2601.0000" + str(n), "paper"),),
        matched=(Hit("speculative decoding", "title"),),
    )


MINEDRAFT = NewPaper(
    paper=Paper(
        paper_id="minedraft",
        title="MineDraft: Drafting with Mined Tokens",
        title_zh="MineDraft：基于挖掘令牌的推测解码",
        authors=("Ann Lee", "Bo Chen", "Émile Durand", "Dan Wu"),
        venue="ICML",
    ),
    topic_id="speculative-decoding",
    topic_title="Speculative decoding",
    entered=NOW,
    links=(
        Link("https://arxiv.org/abs/2601.01234", "paper"),
        Link("https://github.com/lab/minedraft", "code", status="ok"),
        Link("https://lab.github.io/minedraft/", "project"),
        Link("https://github.com/lab/old-minedraft", "code", status="dead"),
    ),
    matched=(Hit("推测解码", "summary"), Hit("speculative decoding", "title")),
)


def _rendered(text: str) -> str:
    """Return Markdown as HTML, as Apprise renders it for services that take HTML."""
    return str(convert_between(NotifyFormat.MARKDOWN, NotifyFormat.HTML, text))  # type: ignore[no-untyped-call]


class _Hrefs(HTMLParser):
    """Every href of an HTML text, and the tags it holds."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.tags: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.hrefs += [v or "" for k, v in attrs if k == "href"]


# --- composing a message -----------------------------------------------------------------


def test_message_groups_papers_by_topic_busiest_first_newest_first() -> None:
    papers = [
        new(1, hours_ago=3),
        new(2, "hallucination", "Hallucination"),
        new(3, hours_ago=1),
        new(4, hours_ago=2),
    ]
    message = compose(papers, SITE)
    assert message.subject == "paperfeeds: 4 new papers in Speculative decoding, Hallucination"
    text = message.text
    order = [text.index(f"Paper number {n}") for n in (3, 4, 1, 2)]
    assert order == sorted(order)
    assert text.index("Speculative decoding (3 new)") < text.index("Hallucination (1 new)")
    for body in (message.html, message.markdown, message.text):
        assert "https://papers.example.org/topics/speculative-decoding.html" in body
        assert "https://papers.example.org/topics/hallucination.html" in body
        assert "https://arxiv.org/abs/2601.00003" in body


def test_message_shows_a_paper_with_its_links_authors_and_why() -> None:
    message = compose([MINEDRAFT], SITE)
    assert message.subject == "paperfeeds: 1 new paper in Speculative decoding"
    page = _Hrefs(message.html)
    # The title leads to the best link (the paper), then its links in words, and its page.
    assert page.hrefs[1:] == [
        "https://arxiv.org/abs/2601.01234",
        "https://arxiv.org/abs/2601.01234",
        "https://github.com/lab/minedraft",
        "https://lab.github.io/minedraft/",
        "https://papers.example.org/papers/minedraft.html",
        "https://papers.example.org/",
    ]
    assert "old-minedraft" not in message.html + message.markdown + message.text  # dead
    for body in (message.html, message.markdown, message.text):
        assert "MineDraft：基于挖掘令牌的推测解码" in body
        assert "Émile Durand et al." in body
        assert "Dan Wu" not in body
        assert "推测解码 in summary" in body
        assert "ICML" in body
    assert '<span lang="zh">MineDraft：基于挖掘令牌的推测解码</span>' in message.html
    rendered = _Hrefs(_rendered(message.markdown))
    assert rendered.hrefs == page.hrefs


def test_a_paper_new_in_three_topics_is_listed_once_with_every_topic() -> None:
    thrice = [
        new(1),
        replace(new(1, "hallucination", "Hallucination"), matched=(Hit("hallucin", "title"),)),
        new(1, "efficiency", "Efficiency"),
        new(2),
    ]
    message = compose(thrice, SITE)
    assert message.subject.startswith("paperfeeds: 2 new papers in ")
    for body in (message.html, message.markdown, message.text):
        assert body.count("Paper number 1") == 1, body
        assert "Speculative decoding, Efficiency, Hallucination" in body  # every topic
        assert "hallucin in title" in body  # and why it matched in each
        assert "2 new papers" not in body
    assert "1 paper above, under another topic" in message.text


def test_links_shown_in_words_keep_their_scheme() -> None:
    site = Site(title="paperfeeds", base_url="http://localhost:34969/")
    message = compose([MINEDRAFT], site)
    for body in (message.html, message.markdown, message.text):
        assert "page: localhost" not in body
    assert ">http://localhost:34969/papers/minedraft.html</a>" in message.html
    assert "page: http://localhost:34969/papers/minedraft.html" in message.text
    assert "code: https://github.com/lab/minedraft" in message.text


def test_an_email_says_each_paper_in_a_line_abstract_first_else_the_ai_summary() -> None:
    abstract = "We draft tokens from mined n-grams, e.g. from code. It is 2x faster. More."
    with_abstract = replace(
        MINEDRAFT, paper=replace(MINEDRAFT.paper, abstract=abstract, summary="本文。")
    )
    html = compose([with_abstract], SITE).html
    assert "We draft tokens from mined n-grams, e.g. from code.<br>" in html
    assert "2x faster" not in html
    assert "AI summary" not in html
    ai = "本文提出挖掘令牌。速度更快。"
    only_ai = replace(MINEDRAFT, paper=replace(MINEDRAFT.paper, summary=ai))
    message = compose([only_ai], SITE)
    assert "AI summary: 本文提出挖掘令牌。<br>" in message.html  # labelled machine-written
    assert "速度更快" not in message.html
    assert "AI summary" not in message.text + message.markdown  # chat stays short
    long = replace(MINEDRAFT, paper=replace(MINEDRAFT.paper, abstract="word " * 200))
    assert "word word…" in compose([long], SITE).html


def test_max_papers_shares_the_cap_among_topics_and_links_the_rest() -> None:
    busy = [new(n, hours_ago=n) for n in range(1, 11)]
    quiet = [new(n, "hallucination", "Hallucination") for n in (21, 22)]
    message = compose(busy + quiet, SITE, max_papers=5)
    listed = [n for n in [*range(1, 11), 21, 22] if f"Paper number {n}\n" in message.text]
    assert listed == [1, 2, 3, 21, 22]  # in turn: busy, quiet, busy, quiet, busy
    topic = "https://papers.example.org/topics/speculative-decoding.html"
    assert f"and 7 more: {topic}" in message.text
    assert f'and 7 more: <a href="{topic}">{topic}</a>' in message.html
    assert f"and 7 more: [{topic}]({topic})" in message.markdown
    assert "Hallucination" in message.text
    assert "more: https://papers.example.org/topics/hall" not in message.text

    only_counts = compose(busy, SITE, max_papers=0)
    assert "Paper number" not in only_counts.text
    assert f"10 new papers: {topic}" in only_counts.text


def test_subject_names_the_busiest_topics_then_says_how_many_more() -> None:
    papers = [new(n, f"topic-{n}", f"A rather long topic title number {n}") for n in range(1, 9)]
    subject = compose(papers, SITE).subject
    assert subject.startswith("paperfeeds: 8 new papers in A rather long topic title number 1")
    assert subject.endswith(" more topics")
    assert len(subject) < 140


HOSTILE = "<script>alert(1)</script> ](javascript:alert(1)) **bold** [x](http://evil.test/) `c`"


def test_hostile_text_is_shown_as_text_and_unsafe_links_never_appear() -> None:
    hostile = NewPaper(
        paper=Paper(
            paper_id="evil",
            title=HOSTILE + "\n# Heading\n- item",
            title_zh="1. 中文 <b>粗体</b>",
            authors=("@everyone", "Robert'); DROP TABLE--"),
            venue="<img src=x onerror=alert(1)>",
        ),
        topic_id="t",
        topic_title="T <i>&</i> [t](javascript:x)",
        entered=NOW,
        links=(
            Link("javascript:alert(1)", "code"),
            Link("data:text/html,<script>alert(1)</script>", "project"),
            Link("https://ok.test/x", "code", final_url="javascript:alert(2)"),
        ),
        matched=(Hit("<b>term</b>", "title"),),
    )
    message = compose([hostile], SITE)
    everything = message.html + message.markdown + message.text + message.subject
    assert "javascript:alert(2)" not in everything
    assert "data:text" not in everything
    assert "@everyone" not in everything  # Discord would ping everyone

    page = _Hrefs(message.html)
    assert set(page.tags) <= {"h2", "a", "ul", "li", "b", "br", "span", "p"}
    assert all(h.startswith("https://") for h in page.hrefs)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in message.html

    rendered = _rendered(message.markdown)
    shown = _Hrefs(rendered)
    assert set(shown.tags) <= {"h2", "a", "ul", "li", "strong", "br", "p"}  # no h1, no script
    assert all(h.startswith("https://") for h in shown.hrefs)
    assert "](javascript:alert(1))" in rendered
    assert "<strong>bold</strong>" not in rendered
    assert "<ol>" not in rendered
    assert "1. 中文" in rendered

    assert "https://ok.test/x" in message.text  # the link itself is fine, shown as text


def test_message_needs_papers() -> None:
    with pytest.raises(ValueError, match="at least one paper"):
        compose([], SITE)


# --- ${NAME} from the environment ----------------------------------------------------------


def test_expand_takes_variables_from_the_environment() -> None:
    env = {"SMTP_USER": "me", "SMTP_PASSWORD": "p@ss$word", "EMPTY": ""}
    url = "mailto://${SMTP_USER}:${SMTP_PASSWORD}@smtp.example.org?to=me@example.org${EMPTY}"
    # Values are percent-encoded where they land: an `@` in a password is no host's start.
    expanded = expand(url, env)
    assert expanded == "mailto://me:p%40ss%24word@smtp.example.org?to=me@example.org"
    import apprise

    ap = apprise.Apprise()
    assert ap.add(expanded)
    assert (ap[0].user, ap[0].password, ap[0].host) == ("me", "p@ss$word", "smtp.example.org")
    # A `$` not starting ${NAME} is kept, and values are not expanded again.
    assert expand("pa$word pa$$word $1 ${A}", {"A": "${B}"}) == "pa$word pa$$word $1 %24%7BB%7D"


def test_a_missing_variable_is_a_config_error_naming_it() -> None:
    with pytest.raises(MissingVariable) as caught:
        expand("ntfy://${NTFY_USER}:" + SECRET + "@ntfy.example.org/t", {}, file="s.yaml", line=7)
    assert isinstance(caught.value, ConfigError)
    assert caught.value.name == "NTFY_USER"
    assert str(caught.value) == (
        "s.yaml:7: alerts: environment variable NTFY_USER is not set (used as ${NTFY_USER})"
    )
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("text", ["x:${" + SECRET, "x:${1" + SECRET + "}", "${ A}" + SECRET])
def test_a_broken_reference_is_an_error_without_the_text(text: str) -> None:
    with pytest.raises(AlertsConfigError) as caught:
        expand(text, {SECRET: "x"})
    assert "does not start ${NAME}" in str(caught.value)
    assert SECRET not in str(caught.value)


# --- when a message is due -------------------------------------------------------------


def test_without_every_a_message_goes_whenever_papers_wait() -> None:
    assert not is_due(AlertState(), None, NOW)
    assert is_due(AlertState(pending=1), None, NOW)
    sent = after_delivery(AlertState(pending=3), NOW, ok=True, sent=3)
    assert sent == AlertState(last_sent=NOW, pending=0)
    assert is_due(AlertState(last_sent=NOW, pending=1), None, NOW + timedelta(seconds=1))


def test_every_makes_a_digest_at_most_once_a_period() -> None:
    day = timedelta(days=1)
    record = AlertState(last_sent=NOW, pending=5)  # 07:00 UTC
    midnight = datetime(2026, 3, 3, tzinfo=UTC)
    assert due_at(record, day) == midnight
    assert not is_due(record, day, midnight - timedelta(seconds=1))
    # A daily cron job that starts a little earlier than yesterday still gets its digest.
    assert is_due(record, day, NOW + day - timedelta(seconds=2))
    assert is_due(AlertState(pending=1), day, NOW)  # a first message need not wait
    assert not is_due(AlertState(last_sent=NOW - 2 * day), day, NOW)  # nothing waits
    # Never two within half a period, even across midnight.
    late = AlertState(last_sent=midnight - timedelta(minutes=1), pending=1)
    assert due_at(late, day) == midnight + timedelta(hours=12) - timedelta(minutes=1)
    six = timedelta(hours=6)
    assert due_at(record, six) == datetime(2026, 3, 2, 12, tzinfo=UTC)


def test_failures_back_off_like_link_checks_and_success_resets() -> None:
    record = AlertState(last_sent=NOW - timedelta(days=1), pending=4)
    now = NOW
    for failures in range(4):
        record = after_delivery(record, now, ok=False, error="timed out after 30 s")
        assert record.failures == failures + 1
        assert record.next_try == now + backoff(failures)
        assert record.pending == 4
        assert record.error == "timed out after 30 s"
        assert not is_due(record, None, now + backoff(failures) - timedelta(seconds=1))
        now += backoff(failures)
        assert is_due(record, None, now)
    assert [backoff(n) for n in range(3)] == [timedelta(hours=h) for h in (1, 2, 4)]
    # A failed digest is tried again after its backoff, not a whole period later.
    failed = after_delivery(AlertState(last_sent=NOW, pending=1), NOW, ok=False)
    assert is_due(failed, timedelta(days=1), NOW + timedelta(hours=1))
    assert failed.error == "delivery failed"
    recovered = after_delivery(record, now, ok=True, sent=3)
    assert recovered == AlertState(last_sent=now, pending=1)


# --- delivering through Apprise, to real servers -----------------------------------------


def _html_part(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None
    content = part.get_content()  # decoded: quoted-printable or base64, then the charset
    assert isinstance(content, str)
    return content


def test_an_email_arrives_with_the_message_in_html(mail: MailServer) -> None:
    message = compose([MINEDRAFT, new(2, "hallucination", "幻觉 Hallucination")], SITE)
    assert message.subject.endswith("in Speculative decoding, 幻觉 Hallucination")
    url = f"mailto://127.0.0.1:{mail.port}?from=papers@example.org&to=me@example.org&mode=insecure"
    assert deliver(url, message, timeout=20) == Delivery(ok=True)
    [received] = mail.messages
    assert received["Subject"] == message.subject
    assert received["To"] == "me@example.org"
    html = _html_part(received)
    assert "MineDraft: Drafting with Mined Tokens" in html
    assert "MineDraft：基于挖掘令牌的推测解码" in html  # Chinese intact
    assert "推测解码 in summary" in html
    assert "Émile Durand et al." in html
    assert set(_Hrefs(message.html).hrefs) <= set(_Hrefs(html).hrefs)
    text = received.get_body(preferencelist=("plain",))
    assert text is not None
    assert "Drafting with Mined Tokens" in text.get_content()


@pytest.mark.filterwarnings("ignore:Session.login_data is deprecated")  # aiosmtpd's own
def test_an_email_with_a_login_arrives_and_the_password_stays_out() -> None:
    server = MailServer(login=("papers", SECRET))
    try:
        url = (
            f"mailto://papers:{SECRET}@127.0.0.1:{server.port}"
            "?from=papers@example.org&to=me@example.org&mode=insecure"
        )
        assert deliver(url, compose([MINEDRAFT], SITE), timeout=20).ok
        assert server.logins == ["papers"]
        [received] = server.messages
        assert SECRET not in received.as_string()
        wrong = url.replace(SECRET, "Wr0ng-" + SECRET)
        failed = deliver(wrong, compose([MINEDRAFT], SITE), timeout=20)
        assert not failed.ok
        assert failed.error
        assert SECRET not in failed.error
    finally:
        server.close()


def _hook(
    web: LinkServer, status: int = 200, path: str = "/hook"
) -> list[tuple[dict[str, str], dict[str, object]]]:
    """Route `path` on the server: record each request's headers and JSON body."""
    seen: list[tuple[dict[str, str], dict[str, object]]] = []

    def handler(req: _Handler) -> None:
        body = json.loads(req.rfile.read(int(req.headers["Content-Length"])))
        seen.append(({k.lower(): v for k, v in req.headers.items()}, body))
        send(req, status, body=b"{}")

    web.route(path, handler)
    return seen


def test_a_json_webhook_receives_the_message_as_text(web: LinkServer) -> None:
    seen = _hook(web)
    message = compose([MINEDRAFT], SITE)
    url = f"json://127.0.0.1:{web.port}/hook?+X-Token={TOKEN}"
    assert deliver(url, message, timeout=20).ok
    [(headers, body)] = seen
    assert body["title"] == message.subject
    assert body["message"] == message.text
    assert headers["x-token"] == TOKEN
    assert TOKEN not in describe(url)


def test_a_webhook_takes_markdown_or_html_when_its_url_asks(web: LinkServer) -> None:
    seen = _hook(web)
    message = compose([MINEDRAFT], SITE)
    for fmt, body in (("markdown", message.markdown), ("html", message.html)):
        assert deliver(f"json://127.0.0.1:{web.port}/hook?format={fmt}", message, timeout=20).ok
        assert seen[-1][1]["message"] == body


def test_a_message_too_long_for_the_service_arrives_in_parts(web: LinkServer) -> None:
    seen = _hook(web, path=f"/hooks/{TOKEN}")  # a Mattermost incoming webhook
    message = compose([new(n, hours_ago=n) for n in range(1, 61)], SITE)
    assert len(message.text) > 4000  # what Mattermost takes at once
    assert deliver(f"mmost://127.0.0.1:{web.port}/{TOKEN}", message, timeout=20).ok
    assert len(seen) > 1
    arrived = "\n".join(str(body["text"]) for _, body in seen)
    assert all(f"Paper number {n}\n" in arrived for n in range(1, 61))


def test_send_test_reaches_the_destination(web: LinkServer) -> None:
    seen = _hook(web)
    result = send_test(f"json://127.0.0.1:{web.port}/hook", timeout=20)
    assert result == Delivery(ok=True)
    assert seen[0][1]["title"] == "paperfeeds: test message"
    assert "webhook (json) at 127.0.0.1:" in str(seen[0][1]["message"])


def test_a_refusing_server_is_a_failure_without_secrets(web: LinkServer) -> None:
    _hook(web, status=500)
    url = f"json://user:{SECRET}@127.0.0.1:{web.port}/hook?+Authorization=Bearer%20{TOKEN}"
    result = deliver(url, compose([MINEDRAFT], SITE), timeout=20)
    assert not result.ok
    assert result.error
    assert "500" in result.error
    assert SECRET not in result.error
    assert TOKEN not in result.error


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens here once the socket is closed


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize(
    "url",
    [
        "json://hookuser:{secret}@127.0.0.1:{port}/{token}/hook?+Authorization=Bearer%20{token}",
        "mailto://papers:{secret}@127.0.0.1:{port}?from=a@example.org&to=b@example.org&mode=insecure",
        "ntfy://alice:{secret}@127.0.0.1:{port}/{token}",
    ],
)
def test_a_server_that_is_down_is_a_failure_without_secrets(
    url: str, closed_port: int, capfd: pytest.CaptureFixture[str]
) -> None:
    url = url.format(secret=SECRET, token=TOKEN, port=closed_port)
    # The application logs everything, as `feeds watch` does (at INFO) and more.
    root, handler = logging.getLogger(), _Records()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        result = deliver(url, compose([MINEDRAFT], SITE), timeout=20)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert not result.ok
    assert result.error
    assert "127.0.0.1" in result.error
    assert not [r for r in handler.records if r.name.startswith("apprise")]
    out, err = capfd.readouterr()
    for said in (result.error, out, err, describe(url)):
        assert SECRET not in said
        assert TOKEN not in said


def test_an_error_blanks_the_secrets_but_keeps_the_server_it_names() -> None:
    url = f"mailtos://papers:{SECRET}@example.org?smtp=smtp.example.org&to=me@example.org"
    said = f'no answer from "smtp.example.org"; "me@example.org" refused; {SECRET}{SECRET}'
    assert deliver_module._redact(said, url, describe(url)) == (
        'no answer from "smtp.example.org"; "***" refused; ***'
    )


def _hanging_server() -> socket.socket:
    """Return a listening socket that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server


@pytest.mark.parametrize("scheme", ["json", "mailto"])
def test_a_hanging_server_is_given_up_after_the_timeout(scheme: str) -> None:
    server = _hanging_server()
    try:
        port = server.getsockname()[1]
        url = f"{scheme}://127.0.0.1:{port}/hook?from=a@example.org&to=b@example.org&mode=insecure"
        done = threading.Event()
        results: list[Delivery] = []

        def run() -> None:
            results.append(deliver(url, compose([MINEDRAFT], SITE), timeout=0.5))
            done.set()

        threading.Thread(target=run, daemon=True).start()
        # Far beyond the timeout, far below the services' own socket timeouts (15 s SMTP).
        assert done.wait(10), "deliver did not give up"
        assert results == [Delivery(ok=False, error="timed out after 0.5 s")]
    finally:
        server.close()


def test_an_abandoned_delivery_cannot_change_the_outcome() -> None:
    release = threading.Event()
    late: list[Delivery] = []

    def slow() -> Delivery:
        release.wait(5)
        late.append(Delivery(ok=True))
        return Delivery(ok=True)

    assert deliver_module._within(0.05, slow) == Delivery(ok=False, error="timed out after 0.05 s")
    release.set()
    for _ in range(100):
        if late:
            break
        threading.Event().wait(0.02)
    assert late == [Delivery(ok=True)]  # it finished, and nobody was told


# --- describing a destination ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown", "secrets"),
    [
        (
            f"mailto://papers:{SECRET}@smtp.example.org?to=me@example.org",
            "email via smtp.example.org",
            [SECRET, "me@example.org"],
        ),
        (
            f"mailtos://u:{SECRET}@example.org?smtp=mail.example.org&to=me@example.org",
            "email via mail.example.org",
            [SECRET],
        ),
        (f"mailto://me:{SECRET}@gmail.com", "email via smtp.gmail.com", [SECRET]),
        (
            f"mailto://u:{SECRET}@127.0.0.1:2525?to=a@b.org&from=p@example.org&mode=insecure",
            "email via 127.0.0.1:2525",
            [SECRET],
        ),
        (
            "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general",
            "Slack",
            ["T1JJ3T3L2", "A1BRTD4JD", "TIiajkdnlazkcOXrIdevi7FQ", "general"],
        ),
        (
            "https://hooks.slack.com/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ",
            "Slack",
            ["T1JJ3T3L2", "TIiajkdnlazkcOXrIdevi7FQ"],
        ),
        (
            "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js",
            "Discord",
            ["4174216298", "JHMHI8qBe7bk2ZwO5U711o3dV_js"],
        ),
        (
            "https://discord.com/api/webhooks/4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js",
            "Discord",
            ["4174216298", "JHMHI8qBe7bk2ZwO5U711o3dV_js"],
        ),
        (
            "tgram://123456789:AABBccddEEFFgghhIIjjKKllMMnnOOppQQr/12315544",
            "Telegram",
            ["123456789", "AABBccddEEFFgghhIIjjKKllMMnnOOppQQr", "12315544"],
        ),
        (
            f"ntfys://alice:{SECRET}@ntfy.example.org/lab-papers",
            "ntfy at ntfy.example.org",
            ["alice", SECRET, "lab-papers"],
        ),
        ("ntfy://lab-papers-x7", "ntfy", ["lab-papers-x7"]),
        (
            f"json://hooks.example.org/path/{TOKEN}?+Authorization=Bearer%20{SECRET}",
            "webhook (json) at hooks.example.org",
            [TOKEN, SECRET, "Authorization"],
        ),
        (
            f"jsons://user:{SECRET}@hooks.example.org:8443/x",
            "webhook (json) at hooks.example.org:8443",
            [SECRET, "user"],
        ),
        (f"xml://[::1]:8080/{TOKEN}", "webhook (xml) at [::1]:8080", [TOKEN]),
        (
            f"matrixs://bob:{SECRET}@matrix.example.org/#room",
            "Matrix at matrix.example.org",
            [SECRET, "bob", "room"],
        ),
        (f"gotify://gotify.example.org/{TOKEN}", "Gotify at gotify.example.org", [TOKEN]),
        (
            "pbul://o.gn5kj6nfhv736I7jC3cj3QLRiyhgl98b",
            "Pushbullet",
            ["gn5kj6nfhv736I7jC3cj3QLRiyhgl98b"],
        ),
    ],
)
def test_describe_shows_service_and_host_never_secrets(
    url: str, shown: str, secrets: list[str]
) -> None:
    assert describe(url) == shown
    for secret in secrets:
        assert secret not in describe(url)


@pytest.mark.parametrize(
    "url",
    [
        f"slack://{SECRET}",
        f"discord://{SECRET}",
        f"mailto://u:{SECRET}@127.0.0.1?mode=bogus",
        f"nosuchservice://u:{SECRET}@example.org",
        f"u:{SECRET}@example.org",
    ],
)
def test_an_unusable_url_is_a_config_error_without_secrets(url: str) -> None:
    with pytest.raises(AlertsConfigError) as caught:
        describe(url)
    assert "Apprise" in str(caught.value)
    assert SECRET not in str(caught.value)
    result = deliver(url, compose([MINEDRAFT], SITE), timeout=5)
    assert not result.ok
    assert result.error == caught.value.message


@pytest.mark.parametrize(
    ("url", "fmt"),
    [
        ("mailto://u:pw@smtp.example.org", NotifyFormat.HTML),
        ("tgram://123456789:AABBccddEEFFgghhIIjjKKllMMnnOOppQQr/12315544", NotifyFormat.HTML),
        ("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", NotifyFormat.MARKDOWN),
        ("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js", NotifyFormat.MARKDOWN),
        ("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js?format=text", NotifyFormat.TEXT),
        ("matrixs://bob:pw@matrix.example.org/#room", NotifyFormat.MARKDOWN),
        ("ntfy://ntfy.example.org/topic", NotifyFormat.TEXT),
        ("ntfy://ntfy.example.org/topic?format=markdown", NotifyFormat.MARKDOWN),
        ("json://hooks.example.org/x", NotifyFormat.TEXT),
        ("json://hooks.example.org/x?format=html", NotifyFormat.HTML),
    ],
)
def test_each_service_gets_the_format_it_takes(url: str, fmt: NotifyFormat) -> None:
    plugin = Apprise.instantiate(url)
    assert plugin is not None
    assert deliver_module._format(plugin) == fmt
