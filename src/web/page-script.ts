/**
 * The status page's script, inline. It listens to `v1/events` (relative to the page) and updates the page in place:
 * rows change, appear and vanish without a reload; values are written with textContent only (the
 * server escapes the first render, the script never parses HTML). It also applies the filters
 * (kept in the query string), ticks the report ages, and says when the stream is down.
 */
export const PAGE_SCRIPT = `
(function () {
  'use strict';
  var COLUMNS = [['ID', 'id'], ['Binary', 'binary'], ['Host', 'host'], ['Zone', 'zone'], ['Status', 'status'], ['State', 'state'],
    ['Updated At', 'updated'], ['Last report', 'age']];
  var services = new Map();
  var groups = new Map();
  var $ = function (id) { return document.getElementById(id); };
  var hasServices = !!$('services');
  var hasGroups = !!$('groups');
  var filters = { topic: '', zone: '', state: '' };
  var params = new URLSearchParams(location.search);
  Object.keys(filters).forEach(function (k) { filters[k] = params.get(k) || ''; });

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function time(iso) { return iso ? iso.slice(0, 10) + ' ' + iso.slice(11, 19) : '\\u2014'; }
  function age(iso) {
    if (!iso) return '\\u2014';
    var s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.floor(s / 60) + ' min';
    if (s < 172800) return Math.floor(s / 3600) + ' h';
    return Math.floor(s / 86400) + ' d';
  }
  function cellText(r, key) {
    switch (key) {
      case 'id': return String(r.id);
      case 'zone': return r.zone == null ? '\\u2014' : r.zone;
      case 'status': return r.status + (r.disabled_reason ? ' (' + r.disabled_reason + ')' : '');
      case 'state': return r.state + (r.forced_down ? ' (forced)' : '');
      case 'updated': return time(r.updated_at);
      case 'age': return age(r.last_report_at);
      default: return String(r[key]);
    }
  }
  function matches(r) {
    return (!filters.topic || r.topic === filters.topic) && (!filters.zone || (r.zone || '') === filters.zone) && (!filters.state || r.state === filters.state);
  }
  function findRow(id) { return document.querySelector('tr[data-id="' + Number(id) + '"]'); }
  function topicSection(topic, create) {
    var list = $('topics');
    for (var i = 0; i < list.children.length; i++) if (list.children[i].dataset.topic === topic) return list.children[i];
    if (!create) return null;
    var sec = el('section', { 'class': 'topic', 'data-topic': topic });
    var h = el('h3', null, topic + ' ');
    h.appendChild(el('span', { 'class': 'count' }));
    sec.appendChild(h);
    var table = el('table');
    var tr = el('tr');
    COLUMNS.forEach(function (c) { tr.appendChild(el('th', { scope: 'col' }, c[0])); });
    var thead = el('thead');
    thead.appendChild(tr);
    table.appendChild(thead);
    table.appendChild(el('tbody'));
    sec.appendChild(table);
    var after = null;
    for (var j = 0; j < list.children.length; j++) if (list.children[j].dataset.topic > topic) { after = list.children[j]; break; }
    list.insertBefore(sec, after);
    return sec;
  }
  function fillRow(tr, r) {
    var was = tr.dataset.state;
    tr.dataset.topic = r.topic;
    tr.dataset.zone = r.zone || '';
    tr.dataset.state = r.state;
    COLUMNS.forEach(function (c, i) {
      var td = tr.children[i];
      td.textContent = cellText(r, c[1]);
      if (c[1] === 'state') td.className = 'c-state ' + r.state;
      if (c[1] === 'status') td.className = 'c-status ' + r.status;
      if (c[1] === 'age') { if (r.last_report_at) td.dataset.ts = r.last_report_at; else delete td.dataset.ts; }
    });
    if (was && was !== r.state) { tr.classList.remove('flash'); void tr.offsetWidth; tr.classList.add('flash'); }
  }
  function upsertService(r) {
    var old = services.get(r.id);
    services.set(r.id, r);
    var tr = findRow(r.id);
    if (tr && old && old.topic !== r.topic) { tr.remove(); tr = null; }
    if (!tr) {
      tr = el('tr', { 'data-id': String(r.id) });
      COLUMNS.forEach(function (c) { tr.appendChild(el('td', { 'class': 'c-' + c[1], 'data-label': c[0] })); });
      var body = topicSection(r.topic, true).querySelector('tbody');
      var before = null;
      for (var i = 0; i < body.children.length; i++) {
        var o = services.get(Number(body.children[i].dataset.id));
        if (o && (o.host > r.host || (o.host === r.host && o.binary > r.binary))) { before = body.children[i]; break; }
      }
      body.insertBefore(tr, before);
    }
    fillRow(tr, r);
  }
  function removeService(id) {
    services.delete(id);
    var tr = findRow(id);
    if (tr) tr.remove();
  }
  function setOptions(select, values, label) {
    var current = select.value;
    var wanted = [''].concat(values);
    if (current && wanted.indexOf(current) < 0) wanted.push(current);
    var have = Array.prototype.map.call(select.options, function (o) { return o.value; });
    if (have.join('\\u0000') === wanted.join('\\u0000')) return;
    while (select.firstChild) select.removeChild(select.firstChild);
    wanted.forEach(function (v) { select.appendChild(el('option', { value: v }, v === '' ? label : v)); });
    select.value = current;
  }
  function refreshServices() {
    if (!hasServices) return;
    var rows = Array.from(services.values());
    var up = rows.filter(function (r) { return r.state === 'up'; }).length;
    $('summary').textContent = rows.length + ' services: ' + up + ' up, ' + (rows.length - up) + ' down';
    $('no-services').hidden = rows.length > 0;
    var list = $('topics');
    Array.prototype.slice.call(list.children).forEach(function (sec) {
      var mine = rows.filter(function (r) { return r.topic === sec.dataset.topic; });
      if (mine.length === 0) { sec.remove(); return; }
      var u = mine.filter(function (r) { return r.state === 'up'; }).length;
      sec.querySelector('.count').textContent = u + ' up \\u00b7 ' + (mine.length - u) + ' down';
      var visible = 0;
      Array.prototype.forEach.call(sec.querySelectorAll('tbody tr'), function (tr) {
        var r = services.get(Number(tr.dataset.id));
        tr.hidden = !r || !matches(r);
        if (!tr.hidden) visible++;
      });
      sec.hidden = visible === 0;
    });
    var uniq = function (f) { return Array.from(new Set(rows.map(f))).sort(); };
    setOptions($('f-topic'), uniq(function (r) { return r.topic; }), 'all topics');
    setOptions($('f-zone'), uniq(function (r) { return r.zone || ''; }).filter(Boolean), 'all zones');
  }
  function renderGroup(g) {
    var hasLeader = $('groups').dataset.hasLeader === 'true';
    var art = null;
    var list = $('group-list');
    for (var i = 0; i < list.children.length; i++) if (list.children[i].dataset.group === g.group) art = list.children[i];
    var fresh = el('article', { 'class': 'group', 'data-group': g.group });
    var h = el('h3', null, g.group + ' ');
    h.appendChild(el('span', { 'class': 'count' }, g.members.length + (g.members.length === 1 ? ' member' : ' members')));
    fresh.appendChild(h);
    if (g.error) fresh.appendChild(el('p', { 'class': 'error' }, 'Cannot be read: ' + g.error.message));
    var p = el('p', { 'class': 'leader' }, 'Leader: ');
    p.appendChild(el('b', null, !hasLeader || g.leader === undefined ? 'not reported by this driver' : (g.leader === null ? '(none)' : g.leader)));
    fresh.appendChild(p);
    var ul = el('ul', { 'class': 'members' });
    g.members.forEach(function (m) {
      var li = el('li');
      li.appendChild(el('code', { 'class': 'member' }, m.member_id));
      li.appendChild(document.createTextNode(' '));
      li.appendChild(el('span', { 'class': 'caps' }, JSON.stringify(m.capabilities)));
      ul.appendChild(li);
    });
    fresh.appendChild(ul);
    if (art) { list.replaceChild(fresh, art); return; }
    var after = null;
    for (var j = 0; j < list.children.length; j++) if (list.children[j].dataset.group > g.group) { after = list.children[j]; break; }
    list.insertBefore(fresh, after);
  }
  function groupShown(g) {
    var sec = $('groups').dataset;
    return g.group.indexOf(sec.prefix || '') === 0 && (!sec.after || g.group > sec.after) && (!sec.through || g.group <= sec.through)
      && (sec.empty === 'true' || g.members.length > 0 || !!g.error);
  }
  function upsertGroup(g) {
    if (!groupShown(g)) return removeGroup(g.group);
    groups.set(g.group, g); renderGroup(g); $('no-groups').hidden = true;
  }
  function removeGroup(name) {
    groups.delete(name);
    var list = $('group-list');
    Array.prototype.slice.call(list.children).forEach(function (a) { if (a.dataset.group === name) a.remove(); });
    $('no-groups').hidden = list.children.length > 0;
  }
  function showProblems(problems) {
    var box = $('problems');
    while (box.firstChild) box.removeChild(box.firstChild);
    (problems || []).forEach(function (p) { box.appendChild(el('p', null, p)); });
    box.hidden = !problems || problems.length === 0;
  }
  function applyFilters() {
    var q = new URLSearchParams(location.search);
    Object.keys(filters).forEach(function (k) { if (filters[k]) q.set(k, filters[k]); else q.delete(k); });
    var s = q.toString();
    history.replaceState(null, '', s ? '?' + s : location.pathname);
    refreshServices();
  }
  if (hasServices) {
    ['topic', 'zone', 'state'].forEach(function (k) {
      var sel = $('f-' + k);
      sel.addEventListener('change', function () { filters[k] = sel.value; applyFilters(); });
    });
  }
  setInterval(function () {
    Array.prototype.forEach.call(document.querySelectorAll('td.c-age[data-ts]'), function (td) { td.textContent = age(td.dataset.ts); });
  }, 1000);

  var live = $('live');
  function setLive(on, text) { live.textContent = text; live.className = on ? 'live' : 'live off'; }
  // The stream's snapshot carries this page's groups: the same group parameters, and its limit.
  var streamQuery = new URLSearchParams();
  if (hasGroups) {
    var sec = $('groups').dataset;
    if (sec.prefix) streamQuery.set('prefix', sec.prefix);
    if (sec.empty === 'true') streamQuery.set('empty', '1');
    if (sec.after) streamQuery.set('cursor', sec.after);
    streamQuery.set('limit', sec.limit);
  }
  var source = new EventSource('v1/events' + (streamQuery.toString() ? '?' + streamQuery : ''));
  source.addEventListener('open', function () { setLive(true, 'live'); });
  source.addEventListener('error', function () { setLive(false, 'reconnecting\\u2026'); });
  source.addEventListener('snapshot', function (e) {
    var d = JSON.parse(e.data);
    if (hasServices && d.services) {
      var ids = new Set(d.services.map(function (r) { return r.id; }));
      Array.from(services.keys()).forEach(function (id) { if (!ids.has(id)) removeService(id); });
      Array.prototype.forEach.call(document.querySelectorAll('#topics tr[data-id]'), function (tr) { if (!ids.has(Number(tr.dataset.id))) tr.remove(); });
      d.services.forEach(upsertService);
      refreshServices();
    }
    if (hasGroups && d.groups) {
      var names = new Set(d.groups.map(function (g) { return g.group; }));
      Array.prototype.slice.call($('group-list').children).forEach(function (a) { if (!names.has(a.dataset.group)) removeGroup(a.dataset.group); });
      d.groups.forEach(upsertGroup);
      $('no-groups').hidden = $('group-list').children.length > 0;
    }
    showProblems(d.problems);
    document.body.dataset.synced = 'true';
  });
  source.addEventListener('service', function (e) { upsertService(JSON.parse(e.data)); refreshServices(); });
  source.addEventListener('service-removed', function (e) { removeService(JSON.parse(e.data).id); refreshServices(); });
  source.addEventListener('group', function (e) { if (hasGroups) upsertGroup(JSON.parse(e.data)); });
  source.addEventListener('group-removed', function (e) { if (hasGroups) removeGroup(JSON.parse(e.data).group); });
  source.addEventListener('health', function (e) { showProblems(JSON.parse(e.data).problems); });
})();
`
