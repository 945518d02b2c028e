"""One self-contained HTML page: its style and script inline, nothing fetched from anywhere.

The Content-Security-Policy allows no request at all (``default-src 'none'``), and only the
page's own style and script, named by their sha256: a ``<script>`` that got into the page
some other way would not run, and nothing can be loaded or sent. Every text from a session, a
trace, a file or the model goes through ``text()``: HTML-escaped, with control and
format characters (bidi overrides such as U+202E, zero-width characters) shown as visible
``\\uXXXX`` escapes, and cut at ``MAX_TEXT`` characters with the count left out said.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import unicodedata

from minipi.cli.terminal import UNSAFE_CATEGORIES, safe

__all__ = ["MAX_LINE", "MAX_TEXT", "attribute", "page", "text"]

MAX_TEXT = 200_000
"""The most characters of one text a page shows (the rest is counted, not shown)."""
MAX_LINE = 4_000
"""The most characters of one line of a tool's output a page shows."""

_CANDIDATE = re.compile(
    r"[^\t\n\x20-\x7e\xa0-\xac\xae-\u05ff\u0710-\u088f\u08e3-\u180d"
    r"\u180f-\u200a\u2070-\ud7ff\ue000-\ufefe\uff00-\ufff8]"
)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    escape = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return f"\x00{escape}\x01"  # marked, made a <span class="ctl"> after escaping


def text(value: str, limit: int = MAX_TEXT) -> str:
    """``value`` as inert HTML text (at most ``limit`` characters, the rest counted)."""
    cut = len(value) - limit
    shown = html.escape(_CANDIDATE.sub(_visible, value[:limit] if cut > 0 else value))
    shown = shown.replace("\x00", '<span class="ctl">').replace("\x01", "</span>")
    if cut > 0:
        shown += f'<span class="cut">… [{cut:,} more characters not shown]</span>'
    return shown


def attribute(value: str, limit: int = 2_000) -> str:
    """``value`` for a quoted attribute: escaped, controls as ``\\uXXXX`` text, cut."""
    return html.escape(safe(value[:limit]), quote=True)


_STYLE = """
:root{--fg:#1d232b;--mute:#5b6673;--line:#d8dee4;--ok:#1a7f37;--bad:#cf222e;--hi:#fff3a3;
--warn:#9a6700}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);margin:0 auto;max-width:1100px;
padding:16px 24px;unicode-bidi:isolate}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:20px 0 6px}
.meta{color:var(--mute);font-size:13px}
.box{border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0;
overflow-wrap:anywhere;white-space:pre-wrap;unicode-bidi:plaintext}
.turn{border-left:3px solid var(--line);padding-left:12px;margin:12px 0}
.call{margin:6px 0}.name{font-weight:600}
code,pre{font:13px/1.45 ui-monospace,monospace}
pre{margin:0;padding:6px 8px;background:#f6f8fa;border-radius:4px;white-space:pre-wrap;
overflow-wrap:anywhere;max-height:none}
.ln{display:block}.no{display:inline-block;min-width:3.5em;color:var(--mute);
user-select:none;text-align:right;padding-right:.8em}
.lit,.ln.lit{background:var(--hi);outline:2px solid #e0b000}
mark{background:#fff8c5}mark.lit{background:#ffd33d}
.err{color:var(--bad)}.ok{color:var(--ok)}.warn{color:var(--warn)}.mute{color:var(--mute)}
.verdict{font-weight:600;border-left-width:6px}.verdict.ok{border-color:var(--ok)}
.verdict.warn{border-color:#d4a72c;background:#fff8c5}.verdict.err{border-color:var(--bad);
background:#ffebe9}.verdict.mute{border-color:var(--line)}
a.claim{color:#0550ae;text-decoration:underline dotted}
.claim.bad{color:var(--bad);text-decoration:underline wavy var(--bad)}
.ctl{color:var(--bad);font-family:ui-monospace,monospace;font-size:12px}
.cut{color:var(--mute);font-style:italic}
details>summary{cursor:pointer;color:var(--mute)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f6f8fa;position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums}
td.answer{max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
tr.row:hover{background:#f3f6fa}
.totals span{display:inline-block;margin-right:18px}
.tone-green{color:#116329;background:#dafbe1}.tone-amber{color:#7d4e00;background:#fff1c2}
.tone-red{color:#a40e26;background:#ffebe9}b.tone{padding:1px 6px;border-radius:4px}
"""

_SCRIPT = """
(function(){
function lightUp(id){
  var t=document.getElementById(id); if(!t) return false;
  for(var d=t.closest('details');d;d=d.parentElement&&d.parentElement.closest('details'))
    d.open=true;
  document.querySelectorAll('.lit').forEach(function(x){x.classList.remove('lit');});
  t.classList.add('lit'); var ln=t.closest('.ln'); if(ln) ln.classList.add('lit');
  t.scrollIntoView({block:'center'}); return true;
}
document.addEventListener('click',function(e){
  var a=e.target.closest('a[href^="#"]');
  if(a&&lightUp(a.getAttribute('href').slice(1))){e.preventDefault();
    history.replaceState(null,'',a.getAttribute('href'));return;}
  var th=e.target.closest('th[data-k]'); if(th){sortBy(th);return;}
  var tr=e.target.closest('tr[data-href]');
  if(tr&&!e.target.closest('a')){location.href=tr.getAttribute('data-href');}
});
function sortBy(th){
  var table=th.closest('table'),body=table.tBodies[0],k=+th.getAttribute('data-k');
  var up=th.getAttribute('data-up')!=='1'; th.setAttribute('data-up',up?'1':'0');
  var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){
    var x=a.cells[k].getAttribute('data-v'),y=b.cells[k].getAttribute('data-v');
    var nx=parseFloat(x),ny=parseFloat(y),r;
    r=(!isNaN(nx)&&!isNaN(ny))?nx-ny:(x<y?-1:x>y?1:0); return up?r:-r;});
  var f=document.createDocumentFragment(); rows.forEach(function(r){f.appendChild(r);});
  body.appendChild(f);
}
if(location.hash) lightUp(location.hash.slice(1));
})();
"""


def _sha256(source: str) -> str:
    return base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")


_POLICY = (
    "default-src 'none'; "
    f"style-src 'sha256-{_sha256(_STYLE)}'; script-src 'sha256-{_sha256(_SCRIPT)}'; "
    "img-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'; frame-src 'none'"
)


def page(title: str, body: str, *, lang: str) -> str:
    """The whole document: ``title`` (plain text), ``body`` (HTML made with ``text()``)."""
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title, 200)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"{body}\n<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )
