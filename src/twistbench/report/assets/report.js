// twistbench report: tabs, the per-item browser (virtualised list, filters, detail), links.
// No dependencies, no network. The item data of each browser is a JSON island parsed after
// the overview has painted (or at once when a link asks for an item).
(function () {
  'use strict';
  var OUT = {
    'correct': ['\u2713', 'correct'], 'partial': ['\u25D0', 'partial'], 'wrong': ['\u2717', 'wrong'],
    'error': ['!', 'error'], 'missing': ['?', 'missing'], 'n/a': ['\u2013', 'n/a']
  };
  var PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000',
    '#F0E442'];
  var ROW_H = 46;
  var browsers = [];

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function cls(o) { return 'o-' + (o === 'n/a' ? 'na' : o); }
  function $(root, sel) { return root.querySelector(sel); }

  // ---- tabs and links -------------------------------------------------------------------
  function showTab(name) {
    document.getElementById('overview').hidden = name !== 'overview';
    document.getElementById('items').hidden = name !== 'items';
    document.getElementById('tab-overview').classList.toggle('on', name === 'overview');
    document.getElementById('tab-items').classList.toggle('on', name === 'items');
    if (name === 'items') {
      browsers.forEach(function (b) { b.load(); b.render(); });
    }
  }

  function route() {
    var h = decodeURIComponent(location.hash.slice(1));
    if (h.indexOf('item=') === 0) {
      var id = h.slice(5);
      showTab('items');
      for (var i = 0; i < browsers.length; i++) {
        if (browsers[i].selectById(id)) { return; }
      }
      return;
    }
    if (h.indexOf('items') === 0) {
      showTab('items');
      // split the raw fragment, then decode each part: a system named 'a&b' stays one value
      var raw = location.hash.slice(1);
      var q = raw.indexOf('?') >= 0 ? raw.slice(raw.indexOf('?') + 1) : '';
      if (q) {
        var params = {};
        q.split('&').forEach(function (kv) {
          var p = kv.split('=');
          params[decodeURIComponent(p[0])] = decodeURIComponent(p.slice(1).join('='));
        });
        browsers.forEach(function (b) { b.setFilters(params); });
      }
      return;
    }
    showTab('overview');
  }

  // ---- one browser per dataset key -------------------------------------------------------
  function Browser(sec) {
    this.sec = sec;
    this.k = sec.getAttribute('data-k');
    this.data = null;
    this.f = {track: '', family: '', system: '', outcome: '', disagree: false, q: ''};
    this.rows = [];
    this.sel = -1;  // index into this.rows
  }

  Browser.prototype.load = function () {
    if (this.data) { return; }
    var el = document.getElementById('items-' + this.k);
    this.data = JSON.parse(el.textContent);
    var items = this.data.items;
    this.index = {};
    for (var i = 0; i < items.length; i++) { this.index[items[i].i] = i; }
    this.build();
    this.apply();
  };

  Browser.prototype.build = function () {
    var d = this.data, self = this;
    var systems = d.systems.map(function (s, i) {
      return '<option value="' + i + '">' + esc(s) + '</option>';
    }).join('');
    this.sec.querySelector('.loading').remove();
    var ui = document.createElement('div');
    ui.innerHTML =
      '<div class="filters">' +
      '<div class="chips" data-chips="track"></div>' +
      '<label>family <select data-f="family"><option value="">all</option></select></label>' +
      '<label>system <select data-f="system"><option value="">any</option>' + systems +
      '</select></label>' +
      '<label title="items where the systems\u2019 outcomes differ"><input type="checkbox" ' +
      'data-f="disagree"> systems disagree</label>' +
      '<input type="search" data-f="q" placeholder="search text or id   /">' +
      '<span class="count"></span></div>' +
      '<div class="filters"><span class="muted">outcome</span>' +
      '<div class="chips" data-chips="outcome"></div>' +
      '<span class="muted">keys: <kbd>j</kbd>/<kbd>k</kbd> or <kbd>\u2193</kbd>/<kbd>\u2191</kbd> ' +
      'next/previous, <kbd>/</kbd> search</span></div>' +
      '<div class="split"><div class="list" tabindex="0"><div class="spacer"></div></div>' +
      '<div class="detail"><div class="empty">no item selected</div></div></div>';
    this.sec.appendChild(ui);
    this.list = $(ui, '.list');
    this.spacer = $(ui, '.spacer');
    this.detail = $(ui, '.detail');
    this.count = $(ui, '.count');
    ui.addEventListener('change', function (e) {
      var f = e.target.getAttribute('data-f');
      if (!f) { return; }
      self.f[f] = e.target.type === 'checkbox' ? e.target.checked : e.target.value;
      if (f === 'track') { self.f.family = ''; }
      self.apply();
    });
    $(ui, '[data-f=q]').addEventListener('input', function (e) {
      self.f.q = e.target.value.trim().toLowerCase();
      self.apply();
    });
    ui.addEventListener('click', function (e) {
      var chip = e.target.closest('.chip');
      if (chip) {
        var which = chip.parentNode.getAttribute('data-chips');
        self.f[which] = chip.getAttribute('data-v');
        if (which === 'track') { self.f.family = ''; }
        self.apply();
        return;
      }
      var row = e.target.closest('.row');
      if (row) { self.select(+row.getAttribute('data-r'), true); return; }
      var act = e.target.closest('[data-act]');
      if (act) { self.step(act.getAttribute('data-act') === 'next' ? 1 : -1); return; }
      var turn = e.target.closest('.turn');
      if (turn) { turn.classList.toggle('open'); }
    });
    this.list.addEventListener('scroll', function () {
      if (!self.pending) {
        self.pending = true;
        requestAnimationFrame(function () { self.pending = false; self.draw(); });
      }
    });
  };

  Browser.prototype.setFilters = function (p) {
    this.load();
    var d = this.data;
    if ('track' in p) { this.f.track = p.track; this.f.family = ''; }
    if ('family' in p) { this.f.family = p.family; }
    if ('outcome' in p) { this.f.outcome = p.outcome; }
    if ('system' in p) {
      var i = d.systems.indexOf(p.system);
      this.f.system = i >= 0 ? String(i) : '';
    }
    if ('q' in p) { this.f.q = p.q.toLowerCase(); }
    this.apply();
  };

  Browser.prototype.matches = function (it, skip) {
    var f = this.f;
    if (skip !== 'track' && f.track && it.t !== f.track) { return false; }
    if (f.family && it.f !== f.family) { return false; }
    if (f.disagree) {
      var first = it.r[0] && it.r[0].o, same = true;
      for (var j = 1; j < it.r.length; j++) { if (it.r[j].o !== first) { same = false; } }
      if (same) { return false; }
    }
    if (skip !== 'outcome' && f.outcome) {
      if (f.system !== '') {
        if (it.r[+f.system].o !== f.outcome) { return false; }
      } else if (!it.r.some(function (r) { return r.o === f.outcome; })) { return false; }
    }
    if (f.q) {
      if (it._s === undefined) { it._s = (it.i + ' ' + it.q + ' ' + it.f).toLowerCase(); }
      if (it._s.indexOf(f.q) < 0) { return false; }
    }
    return true;
  };

  Browser.prototype.apply = function () {
    var items = this.data.items, f = this.f, self = this;
    var keep = items.length ? this.rows[this.sel] : undefined;
    this.rows = [];
    var tc = {}, oc = {}, fams = {};
    for (var i = 0; i < items.length; i++) {
      var it = items[i];
      if (this.matches(it, 'track')) { tc[it.t] = (tc[it.t] || 0) + 1; }
      if (!f.track || it.t === f.track) { fams[it.f] = (fams[it.f] || 0) + 1; }
      if (this.matches(it, 'outcome')) {
        var seen = {};
        it.r.forEach(function (r, s) {
          if ((f.system === '' || s === +f.system) && !seen[r.o]) {
            seen[r.o] = 1; oc[r.o] = (oc[r.o] || 0) + 1;
          }
        });
      }
      if (this.matches(it)) { this.rows.push(i); }
    }
    var total = 0;
    Object.keys(tc).forEach(function (t) { total += tc[t]; });
    this.chips('track', [['', 'all', total]].concat(this.data.tracks.map(function (t) {
      return [t, t, tc[t] || 0];
    })));
    this.chips('outcome', [['', 'all', null]].concat(this.data.outcomes.filter(function (o) {
      return oc[o] || f.outcome === o;
    }).map(function (o) { return [o, OUT[o][0] + ' ' + OUT[o][1], oc[o] || 0]; })));
    var famSel = $(this.sec, '[data-f=family]');
    famSel.innerHTML = '<option value="">all</option>' + Object.keys(fams).sort().map(
      function (x) {
        return '<option' + (x === f.family ? ' selected' : '') + ' value="' + esc(x) + '">' +
          esc(x) + ' (' + fams[x] + ')</option>';
      }).join('');
    $(this.sec, '[data-f=system]').value = f.system;
    $(this.sec, '[data-f=disagree]').checked = f.disagree;
    var q = $(this.sec, '[data-f=q]');
    if (q.value.trim().toLowerCase() !== f.q) { q.value = f.q; }
    this.count.textContent = this.rows.length.toLocaleString() + ' of ' +
      items.length.toLocaleString() + ' items';
    this.spacer.style.height = (this.rows.length * ROW_H) + 'px';
    var at = keep === undefined ? -1 : this.rows.indexOf(keep);
    this.sel = at;
    if (at < 0 && this.rows.length) { this.select(0, false); } else {
      this.showDetail();
      this.draw();
    }
  };

  Browser.prototype.chips = function (which, list) {
    var f = this.f;
    $(this.sec, '[data-chips=' + which + ']').innerHTML = list.map(function (c) {
      return '<button class="chip' + (f[which] === c[0] ? ' on' : '') + '" data-v="' +
        esc(c[0]) + '">' + esc(c[1]) + (c[2] === null ? '' : '<span class="n">' + c[2] +
        '</span>') + '</button>';
    }).join('');
  };

  Browser.prototype.draw = function () {
    if (!this.list || this.list.offsetParent === null) { return; }
    var top = this.list.scrollTop, h = this.list.clientHeight || 600;
    var a = Math.max(0, Math.floor(top / ROW_H) - 6);
    var b = Math.min(this.rows.length, Math.ceil((top + h) / ROW_H) + 6);
    var items = this.data.items, html = [];
    for (var r = a; r < b; r++) {
      var it = items[this.rows[r]];
      var dots = it.r.map(function (x, s) {
        return '<span class="dot ' + cls(x.o) + '" title="' + esc(this.data.systems[s]) + ': ' +
          esc(OUT[x.o][1]) + '">' + OUT[x.o][0] + '</span>';
      }, this).join('');
      html.push('<div class="row' + (r === this.sel ? ' sel' : '') + '" data-r="' + r +
        '" data-id="' + esc(it.i) + '" style="top:' + (r * ROW_H) + 'px"><div class="l1">' +
        '<span class="dots">' + dots + '</span><span class="tag">' + esc(it.t) + '</span>' +
        '<span class="t">' + esc(it.q) + '</span></div><div class="l2">' + esc(it.i) + ' \u00b7 ' +
        esc(it.f) + '</div></div>');
    }
    this.spacer.innerHTML = html.join('');
  };

  Browser.prototype.select = function (r, byUser) {
    if (r < 0 || r >= this.rows.length) { return; }
    this.sel = r;
    var top = r * ROW_H, lh = this.list.clientHeight;
    if (lh && (top < this.list.scrollTop || top + ROW_H > this.list.scrollTop + lh)) {
      this.list.scrollTop = Math.max(0, top - lh / 2);
    }
    this.draw();
    this.showDetail();
    if (byUser) {
      history.replaceState(null, '', '#item=' + encodeURIComponent(this.data.items[this.rows[r]].i));
    }
  };

  Browser.prototype.step = function (d) { this.select(this.sel + d, true); };

  Browser.prototype.selectById = function (id) {
    this.load();
    var i = this.index[id];
    if (i === undefined) { return false; }
    if (this.rows.indexOf(i) < 0) {
      this.f = {track: '', family: '', system: '', outcome: '', disagree: false, q: ''};
      this.apply();
    }
    this.select(this.rows.indexOf(i), false);
    var self = this;
    requestAnimationFrame(function () { self.select(self.sel, false); });
    return true;
  };

  Browser.prototype.turns = function (conv, label, ids, gold) {
    var table = this.data.turns[conv] || {};
    return '<div class="tg">' + esc(label) + '</div>' + ids.map(function (id) {
      var t = table[id];
      if (!t) {
        return '<div class="turn unknown"><div class="tm">' + esc(id) +
          ' \u00b7 not a turn of this conversation</div></div>';
      }
      // a cited turn the gold names: say which part of the gold (e.g. "superseded: 400 seats")
      var g = gold && gold[id] ? ' gold' : '';
      return '<div class="turn' + g + '"><div class="tm">' + esc(id) + ' \u00b7 ' + esc(t[0]) +
        ' \u00b7 session ' + t[1] + ' \u00b7 ' + esc(t[2]) +
        (g ? ' \u00b7 <b>\u2605 gold ' + esc(gold[id]) + '</b>' : '') +
        '</div><div class="tt">' + esc(t[3]) + '</div></div>';
    }).join('');
  };

  function fields(list) {
    if (!list || !list.length) { return ''; }
    return '<dl class="f">' + list.map(function (f) {
      return '<dt>' + esc(f[0]) + '</dt><dd>' + esc(f[1]) + '</dd>';
    }).join('') + '</dl>';
  }

  Browser.prototype.showDetail = function () {
    if (this.sel < 0 || !this.rows.length) {
      this.detail.innerHTML = '<div class="empty">no item matches these filters</div>';
      return;
    }
    var it = this.data.items[this.rows[this.sel]], self = this;
    var goldIds = {};
    it.gt.forEach(function (g) { g[1].forEach(function (id) { goldIds[id] = g[0]; }); });
    var cards = ['<div class="card gold"><h4><span class="nm">Gold</span></h4>' + fields(it.g) +
      it.gt.map(function (g) { return self.turns(it.c, g[0], g[1], null); }).join('') + '</div>'];
    it.r.forEach(function (r, s) {
      var name = self.data.systems[s];
      cards.push('<div class="card sys" data-system="' + esc(name) + '" data-outcome="' +
        esc(r.o) + '"><h4><span class="nm"><span class="sw" style="background:' +
        PALETTE[s % PALETTE.length] + '"></span>' + esc(name) + '</span><span class="badge ' +
        cls(r.o) + '">' + OUT[r.o][0] + ' ' + OUT[r.o][1] + '</span></h4>' +
        (r.s ? '<div class="score">' + esc(r.s) + '</div>' : '') +
        (r.w ? '<div class="why">' + esc(r.w) + '</div>' : '') +
        (r.e ? '<div class="errbox">' + esc(r.e) + '</div>' : '') + fields(r.f) +
        (r.ct || []).map(function (g) { return self.turns(it.c, g[0], g[1], goldIds); }).join('') +
        '</div>');
    });
    var n = it.r.length + 1;
    this.detail.innerHTML =
      '<div class="dhead"><div class="crumbs">' + esc(it.t) + ' \u00b7 ' + esc(it.f) + ' \u00b7 ' +
      esc(it.c) + ' \u00b7 <code>' + esc(it.i) + '</code></div><div class="dnav">' +
      '<button data-act="prev" title="previous (k)">\u2190 prev</button><span>' +
      (this.sel + 1).toLocaleString() + ' / ' + this.rows.length.toLocaleString() + '</span>' +
      '<button data-act="next" title="next (j)">next \u2192</button>' +
      '<a class="permalink" href="#item=' + encodeURIComponent(it.i) + '">link</a></div></div>' +
      '<div class="lead"><span class="kind">' + esc(this.data.lead[it.t] || it.t) + '</span>' +
      esc(it.q) +
      '</div><div class="cards" style="grid-template-columns:repeat(auto-fit,minmax(' +
      (n > 5 ? 200 : 170) + 'px,1fr))">' + cards.join('') + '</div>';
    this.detail.scrollTop = 0;
  };

  Browser.prototype.render = function () { if (this.data) { this.draw(); } };

  // ---- keyboard ---------------------------------------------------------------------------
  document.addEventListener('keydown', function (e) {
    if (document.getElementById('items').hidden || e.ctrlKey || e.metaKey || e.altKey) { return; }
    var tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'select' || tag === 'textarea') {
      if (e.key === 'Escape') { e.target.blur(); }
      return;
    }
    var b = browsers.filter(function (x) { return x.data; })[0];
    if (!b) { return; }
    if (e.key === 'j' || e.key === 'ArrowDown') { b.step(1); e.preventDefault(); }
    else if (e.key === 'k' || e.key === 'ArrowUp') { b.step(-1); e.preventDefault(); }
    else if (e.key === '/') { $(b.sec, '[data-f=q]').focus(); e.preventDefault(); }
  });

  // ---- start: the overview paints first; item data is parsed when asked for or when idle ----
  document.querySelectorAll('section.browser').forEach(function (s) {
    browsers.push(new Browser(s));
  });
  document.getElementById('tab-overview').addEventListener('click', function (e) {
    e.preventDefault(); history.replaceState(null, '', '#overview'); showTab('overview');
  });
  document.getElementById('tab-items').addEventListener('click', function (e) {
    e.preventDefault(); history.replaceState(null, '', '#items'); showTab('items');
  });
  window.addEventListener('hashchange', route);
  if (location.hash.length > 1) { route(); }
  var idle = window.requestIdleCallback || function (f) { return setTimeout(f, 200); };
  idle(function () {
    browsers.forEach(function (b) { b.load(); });
    window.twistReadyAt = performance.now();  // read by benchmarks/bench_report.py
    window.twistReady = true;
  });
})();
