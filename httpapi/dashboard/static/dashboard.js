// Heureka dashboard. It reads /dashboard/api/state and renders it with plain
// DOM calls; no framework, no build step. Registry changes come through the
// change stream (an EventSource on /eureka/stream): each event makes the
// page read the state at once. The page also reads the state every
// refreshMillis for what the stream does not carry (members,
// self-preservation, holds on eviction), and falls back to that polling
// alone while the stream is down or refused (no EventSource, 401, 403, 404,
// 503: a node without the stream, credentials the browser does not send,
// too many streams open). Every value that comes from the
// registry (clients choose their ids, hosts and metadata) is inserted as
// text, never as HTML, and only http(s) links are made clickable.
//
// The actions call the Eureka API itself (/eureka/apps/…) with
// credentials 'same-origin', so that a page loaded with credentials sends
// them along and the API's own checks apply.
'use strict';

(function () {
  const STATE_URL = '/dashboard/api/state';
  const STREAM_URL = '/eureka/stream';
  // STREAM_RETRY_MS is how long the page polls before it opens the stream
  // again after the server refused it.
  const STREAM_RETRY_MS = 30000;
  // STREAM_GAP_MS is the least time between two state reads that stream
  // events cause: a registry that changes all the time costs the page (and
  // the node) one read a second, not one per event.
  const STREAM_GAP_MS = 1000;

  // url makes a path absolute on this origin. A page opened as
  // http://user:pass@host/ has the credentials in its own URL, and the
  // browser refuses fetch() of a relative URL resolved against it;
  // location.origin has no credentials, and the browser still sends the
  // ones it was given for this origin (credentials: 'same-origin').
  const url = (path) => location.origin + path;
  const MAX_ROWS = 500; // instances drawn at most; the search box narrows the rest

  let state = null; // the last state document
  let apps = []; // the applications of the last snapshot received
  let appsJSON = ''; // … as JSON, to tell a real change from a new snapshot version
  let appsRev = 0; // counts real changes of `apps`
  let token = ''; // the registry token of the snapshot `apps` came from
  let drawn = { rev: -1, filter: null }; // what the applications list shows
  let timer = 0;
  let stream = null; // the EventSource, while it is open or reconnecting
  let live = false; // the stream is open: registry changes arrive through it
  let streamEvents = 0; // events received, shown to tests as data-stream-events
  let lastLoad = -Infinity; // performance.now() when the last state read started
  let soon = 0; // the timer of a state read an event asked for, 0 if none

  const $ = (id) => document.getElementById(id);

  // h builds an element: h('td', {class: 'num'}, 'text', childElement, …).
  // Attributes whose value is null, undefined or false are left out.
  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false || c === '') continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // link is an anchor for an http(s) URL, or the URL as text otherwise
  // (a javascript: URL from a client must never become clickable).
  function link(url, label) {
    if (!/^https?:\/\//i.test(url || '')) return url ? document.createTextNode(url) : '—';
    return h('a', { href: url, rel: 'noopener noreferrer' }, label || url);
  }

  // ---- formatting -------------------------------------------------------

  function duration(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min';
    const hr = Math.floor(m / 60);
    if (hr < 24) return hr + ' h ' + (m % 60) + ' min';
    return Math.floor(hr / 24) + ' d ' + (hr % 24) + ' h';
  }

  function windowText(seconds) {
    if (seconds >= 60 && seconds % 60 === 0) return seconds / 60 === 1 ? 'minute' : seconds / 60 + ' minutes';
    return (Math.round(seconds * 100) / 100) + ' s';
  }

  function clock(ms) {
    return new Date(ms).toLocaleTimeString();
  }

  function plural(n, one, many) {
    return n + ' ' + (n === 1 ? one : many);
  }

  // decision is the first words of a self-preservation reason ("engaged",
  // "not engaged", "released", …), which the registry puts before a colon.
  function decision(reason) {
    if (!reason) return 'not reported';
    const head = reason.split(':')[0].trim();
    return head === 'self-preservation is off' ? 'off' : head;
  }

  const cssToken = (s) => String(s || 'unknown').toLowerCase().replace(/[^a-z0-9]+/g, '-');

  // ---- polling ----------------------------------------------------------

  // refresh fetches the state and renders it, then schedules the next
  // poll. Called while a fetch is under way (an action just finished), it
  // fetches once more right after, so that there is only ever one poll loop.
  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    clearTimeout(timer);
    try {
      if (!document.hidden) await load(); // a tab nobody looks at does not poll
    } catch (err) {
      notice('This page cannot reach the node (' + err.message + '); it keeps trying.', 'error');
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      } else {
        timer = setTimeout(refresh, state ? state.refreshMillis : 3000);
      }
    }
  }

  // ---- the change stream ------------------------------------------------

  // openStream opens the change stream. Each event (the snapshot a new
  // connection starts with, a delta after every change) makes the page read
  // the state at once, or STREAM_GAP_MS after the last read if that was
  // sooner; the event's own document is not used, so that the
  // page draws the registry one way only. While the browser reconnects by
  // itself (the connection dropped; it resumes with Last-Event-ID) the page
  // polls; when the server refused the stream, it polls and tries again
  // after STREAM_RETRY_MS.
  function openStream() {
    if (stream || typeof EventSource === 'undefined') {
      updates();
      return;
    }
    const es = new EventSource(url(STREAM_URL));
    stream = es;
    const changed = () => {
      streamEvents++;
      document.documentElement.dataset.streamEvents = String(streamEvents);
      if (soon) return; // a read is already due, and it will see this change too
      soon = setTimeout(() => {
        soon = 0;
        refresh();
      }, Math.max(0, lastLoad + STREAM_GAP_MS - performance.now()));
    };
    es.addEventListener('snapshot', changed);
    es.addEventListener('delta', changed);
    es.addEventListener('open', () => {
      live = true;
      updates();
    });
    es.addEventListener('error', () => {
      const wasLive = live;
      live = false;
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        if (stream === es) stream = null;
        setTimeout(openStream, STREAM_RETRY_MS);
      }
      updates();
      if (wasLive) refresh(); // poll from now on, starting now
    });
    updates();
  }

  // updates says on the page how it gets its updates (data-updates is
  // "stream" or "polling", for people and tests alike).
  function updates() {
    document.documentElement.dataset.updates = live ? 'stream' : 'polling';
    if (state) renderRefreshed(state);
  }

  function renderRefreshed(s) {
    $('refreshed').textContent = 'Updated ' + clock(s.now) + (live
      ? '; registry changes live, the rest every ' + duration(s.refreshMillis)
      : ', every ' + duration(s.refreshMillis));
  }

  async function load() {
    lastLoad = performance.now();
    const query = token ? '?known=' + encodeURIComponent(token) : '';
    const resp = await fetch(url(STATE_URL + query), { credentials: 'same-origin', cache: 'no-store' });
    if (!resp.ok) throw new Error(await problem(resp));
    const s = await resp.json();
    if (s.applications) { // null: the snapshot we hold is still current
      // A new snapshot version may hold the same applications (the delta
      // window was pruned); redrawing them would only lose a click.
      const json = JSON.stringify(s.applications);
      if (json !== appsJSON) {
        apps = s.applications;
        appsJSON = json;
        appsRev++;
      }
      token = s.registry.token;
    }
    state = s;
    render();
  }

  // problem describes a failed response for a person.
  async function problem(resp) {
    const text = (await resp.text().catch(() => '')).trim();
    switch (resp.status) {
      case 401:
        return '401: this needs credentials; reload the page and sign in';
      case 403:
        return '403: your account may not do this' + (text ? ' (' + text + ')' : '');
      default:
        return resp.status + (text ? ': ' + text : ' ' + resp.statusText);
    }
  }

  function notice(text, kind) {
    const n = $('notice');
    n.hidden = !text;
    n.textContent = text || '';
    n.className = 'notice ' + (kind || '');
  }

  // ---- rendering --------------------------------------------------------

  function render() {
    const s = state;
    document.title = 'Heureka · ' + s.node.name;
    $('node-name').textContent = s.node.name || '—';
    $('node-version').textContent = s.node.version || '—';
    $('node-uptime').textContent = duration(s.node.uptimeSeconds * 1000);
    renderRefreshed(s);
    const why = s.node.readyReason || '';
    if (!s.node.ready && why.indexOf('join refused') >= 0) {
      notice('This node cannot join its cluster (' + why + '). Eureka clients that ask it are sent to ' +
        'another server until it joins.', 'error');
    } else if (!s.node.ready) {
      notice('This node is still syncing with its cluster: the registry below may be incomplete, and ' +
        'Eureka clients that ask this node are sent to another server until it is done.' + (why ? ' (' + why + ')' : ''), 'info');
    } else {
      notice(why.indexOf('serving alone') === 0 ? 'This node ' + why + '.' : '', 'info');
    }
    renderHolds(s.eviction);
    renderMembers(s.members);
    renderRegions(s.regions, s.now);
    renderSelfPreservation(s.selfPreservation);
    renderSummary(s.registry);
    const filter = $('search').value.trim().toLowerCase();
    if (drawn.rev !== appsRev || drawn.filter !== filter) {
      renderApps(filter);
      drawn = { rev: appsRev, filter: filter };
    }
    $('apps').dataset.token = token; // the snapshot the list shows
    updateAges();
  }

  function renderMembers(members) {
    $('member-count').textContent = '(' + plural(members.length, 'member', 'members') + ')';
    const body = $('members').tBodies[0];
    body.replaceChildren(...members.map((m) => {
      const where = (m.url || '').replace(/^https?:\/\//, '').replace(/\/eureka\/?$/, '');
      return h('tr', { 'data-member': m.name },
        h('td', null, m.name, m.self ? h('span', { class: 'tag' }, 'this node') : null),
        h('td', null, h('span', { class: 'badge state-' + cssToken(m.state) }, m.state)),
        h('td', { class: 'mono' }, m.address || '—'),
        h('td', { class: 'mono' }, m.url ? link(m.url, where) : '—'),
        h('td', { class: 'num' }, Math.round((m.owned || 0) * 100) + ' %'),
        h('td', { class: 'num' }, m.renewalsLastWindow || 0),
        h('td', { class: 'reason' },
          h('span', { class: 'badge sp-' + cssToken(decision(m.selfPreservation)) }, decision(m.selfPreservation)),
          ' ', m.selfPreservation ? h('span', { class: 'muted' }, m.selfPreservation) : null));
    }));
  }

  // renderRegions shows the remote regions (GET /admin/regions's
  // document); the section is hidden on a node without any.
  function renderRegions(rg, now) {
    const remotes = (rg && rg.remotes) || [];
    $('regions').hidden = remotes.length === 0;
    if (remotes.length === 0) {
      return;
    }
    $('regions-count').textContent = '(' + plural(remotes.length, 'region', 'regions') + ')';
    $('regions-hint').textContent = 'This cluster is region ' + rg.region + '. ' +
      (rg.ready ? 'Every remote region has loaded; ' : 'Not every remote region has loaded yet: ?regions= reads answer 403; ') +
      'transparent fallback is ' + (rg.transparentFallback ? 'on.' : 'off (plain reads stay local).');
    const since = (t) => t ? duration(now - Date.parse(t)) + ' ago' : '—';
    const states = { ok: 'state-alive', stale: 'state-suspect', dropped: 'state-dead', loading: 'state-suspect' };
    $('regions-table').tBodies[0].replaceChildren(...remotes.map((r) => h('tr', { 'data-region': r.name },
      h('td', null, r.name),
      h('td', null, h('span', { class: 'badge ' + (states[r.state] || '') }, r.state)),
      h('td', { class: 'num' }, r.instances || 0),
      h('td', null, since(r.lastSuccess)),
      h('td', null, since(r.lastChange)),
      h('td', { class: 'mono' }, r.url || '—'),
      h('td', { class: 'reason' }, r.lastError || ''))));
  }

  // holdNames are the reasons of the holds on eviction, for a person.
  const holdNames = {
    'self-preservation': 'Self-preservation',
    'silent-member': 'Silent member',
    'deaf': 'No member heard',
    'views-disagree': 'Membership views disagree',
  };

  // renderHolds lists every hold on this node's eviction, each with its
  // detail in the registry's words and when it ends at the latest; the
  // section is hidden while nothing holds.
  function renderHolds(ev) {
    const holds = (ev && ev.holds) || [];
    $('eviction-holds').hidden = holds.length === 0;
    $('holds-count').textContent = holds.length ? '(' + plural(holds.length, 'hold', 'holds') + ')' : '';
    $('holds').replaceChildren(...holds.map((hd) => h('li', { 'data-reason': hd.reason },
      h('span', { class: 'badge sp-engaged' }, holdNames[hd.reason] || hd.reason), ' ',
      hd.detail || '',
      hd.since ? h('span', { class: 'until' }, ' · since ' + clock(Date.parse(hd.since))) : null,
      hd.until ? h('span', { class: 'until' }, ' · ends by ' + clock(Date.parse(hd.until))) : null)));
  }

  function renderSelfPreservation(sp) {
    const headline = $('sp-headline');
    const explain = $('sp-explain');
    const win = windowText(sp.windowSeconds);
    if (!sp.enabled) {
      headline.className = 'sp-headline off';
      headline.textContent = 'Off. Leases that run out are evicted, whatever the renewal rate.';
      explain.textContent = 'An operator switched self-preservation off (--self-preservation=false or ' +
        'PUT /admin/self-preservation?enabled=false). That is fine while every client renews normally.';
    } else if (sp.engaged) {
      headline.className = 'sp-headline engaged';
      headline.textContent = 'Engaged' + (sp.engagedSince ? ' since ' + clock(Date.parse(sp.engagedSince)) : '') +
        '. Leases that run out are kept for now instead of being evicted.';
      explain.textContent = 'Fewer renewals arrive than expected. When many clients go quiet at once, the ' +
        'cause is more often the network than the clients, so the registry keeps their entries rather than ' +
        'emptying itself. Nothing is lost: eviction resumes once renewals are back above the threshold, and ' +
        'after one renewal-threshold update interval (15 minutes by default) the registry accepts the lower ' +
        'rate as the new normal and evicts what stayed silent.';
    } else {
      headline.className = 'sp-headline calm';
      headline.textContent = 'Not engaged. Renewals are above the threshold; leases that run out are evicted as usual.';
      explain.textContent = 'Self-preservation would keep expired leases only if renewals across the cluster ' +
        'fell to the threshold or below, as they do when a network fault cuts many clients off at once.';
    }
    $('sp-reason').textContent = sp.reason || 'no reading yet';
    const fig = (label, value, title) => h('div', { title: title },
      h('dt', null, label), h('dd', null, value));
    $('sp-figures').replaceChildren(
      fig('Expected clients', sp.expected, 'Instances expected to renew (recounted every renewal-threshold update interval)'),
      fig('Threshold', sp.threshold + ' per ' + win, 'Renewals per window at or below which self-preservation engages'),
      fig('Measured', sp.renewsLastWindow + ' in the last ' + win, 'Client renewals and registrations counted cluster-wide'),
      fig('Counted here', sp.localRenewals, 'Renewals clients sent to this node'),
      fig('From peers', sp.peerRenewals + ' (' + plural(Math.max(0, sp.members - 1), 'peer', 'peers') + ')',
        'Renewals the reachable members reported'),
      fig('Expiration', sp.expirationEnabled ? 'enabled' : 'held', 'Whether expired leases may be evicted now'));
  }

  function renderSummary(reg) {
    const statuses = Object.entries(reg.statuses || {}).sort()
      .map(([st, n]) => n + ' ' + st).join(' · ');
    $('app-count').textContent = '(' + plural(reg.applications, 'application', 'applications') + ', ' +
      plural(reg.instances, 'instance', 'instances') + (statuses ? ': ' + statuses : '') + ')';
  }

  // haystack is the lower-case text the search box matches an instance by.
  function haystack(inst) {
    const parts = [inst.app, inst.id, inst.hostName, inst.ipAddr, inst.status, inst.overriddenStatus,
      inst.zone, inst.vipAddress, inst.secureVipAddress, inst.dataCenter];
    for (const [k, v] of Object.entries(inst.metadata || {})) parts.push(k + '=' + v);
    return parts.filter(Boolean).join(' ').toLowerCase();
  }

  // renderApps draws the applications whose name, or some of whose
  // instances, contain every word of the filter.
  function renderApps(filter) {
    const words = filter.split(/\s+/).filter(Boolean);
    const matches = (text) => words.every((w) => text.includes(w));
    const root = $('apps');
    const sections = [];
    let rows = 0;
    let hidden = 0;
    for (const app of apps) {
      const all = matches(app.name.toLowerCase());
      const shown = all ? app.instances : app.instances.filter((i) => matches(haystack(i)));
      if (shown.length === 0) continue;
      const room = Math.max(0, MAX_ROWS - rows);
      hidden += Math.max(0, shown.length - room);
      rows += Math.min(shown.length, room);
      if (room > 0) sections.push(renderApp(app, shown.slice(0, room)));
    }
    if (sections.length === 0) {
      sections.push(h('p', { class: 'empty' }, apps.length === 0
        ? 'No applications are registered yet. Point a Eureka client at ' + location.origin + '/eureka/.'
        : 'Nothing matches “' + filter + '”.'));
    }
    if (hidden > 0) {
      sections.push(h('p', { class: 'empty' }, plural(hidden, 'more instance matches', 'more instances match') +
        '; narrow the search to see them.'));
    }
    root.replaceChildren(...sections);
  }

  function renderApp(app, instances) {
    const counts = {};
    for (const i of app.instances) counts[i.status] = (counts[i.status] || 0) + 1;
    return h('section', { class: 'app', 'data-app': app.name },
      h('h3', null, app.name, ' ',
        Object.entries(counts).sort().map(([st, n]) =>
          h('span', { class: 'badge status-' + cssToken(st) }, n + ' ' + st))),
      h('table', { class: 'grid instances' },
        h('thead', null, h('tr', null,
          h('th', null, 'Instance'), h('th', null, 'Status'), h('th', null, 'Zone'),
          h('th', null, 'Lease age'), h('th', null, 'Last renewal'), h('th', null, 'Metadata'),
          h('th', null, 'Actions'))),
        h('tbody', null, instances.map(renderInstance))));
  }

  function renderInstance(i) {
    const port = i.port ? ':' + i.port : '';
    const where = [i.hostName + port, i.ipAddr && i.ipAddr !== i.hostName ? i.ipAddr + port : '']
      .filter(Boolean).join(' · ');
    const meta = Object.entries(i.metadata || {}).sort()
      .map(([k, v]) => h('span', { class: 'kv' }, h('b', null, k), '=', v));
    const lease = 'lease ' + i.leaseDurationSecs + ' s, renews every ' + i.renewalIntervalSecs + ' s';
    return h('tr', { 'data-app': i.app, 'data-id': i.id },
      h('td', null,
        h('div', { class: 'id' }, i.homePageUrl ? link(i.homePageUrl, i.id) : i.id),
        h('div', { class: 'mono muted' }, where, i.securePort ? ' (https :' + i.securePort + ')' : ''),
        i.vipAddress ? h('div', { class: 'muted' }, 'VIP ' + i.vipAddress) : null),
      h('td', null,
        h('span', { class: 'badge status-' + cssToken(i.status) }, i.status),
        i.overriddenStatus ? h('div', { class: 'muted' }, 'override: ' + i.overriddenStatus) : null),
      h('td', null, i.zone || '—'),
      h('td', { 'data-since': i.registered, title: lease }),
      h('td', { 'data-since': i.lastRenewal, 'data-ago': 'true' }),
      h('td', { class: 'meta' }, meta.length ? meta : h('span', { class: 'muted' }, 'none')),
      h('td', { class: 'actions' }, actionsFor(i).map((name) =>
        h('button', { type: 'button', 'data-action': name, class: ACTIONS[name].danger ? 'danger' : null },
          ACTIONS[name].label))));
  }

  // updateAges rewrites the lease ages and renewal times against the
  // server's clock, without redrawing the rows (so that a click in
  // progress is not lost).
  function updateAges() {
    for (const cell of document.querySelectorAll('[data-since]')) {
      const since = Number(cell.dataset.since);
      if (!since) {
        cell.textContent = '—';
        continue;
      }
      cell.textContent = duration(state.now - since) + (cell.dataset.ago ? ' ago' : '');
      cell.title = cell.title || new Date(since).toISOString();
    }
  }

  // ---- actions ----------------------------------------------------------

  // ACTIONS are the instance actions: the Eureka API call each makes and
  // the question that confirms it. `name` is "APP/id".
  const ACTIONS = {
    'out-of-service': {
      label: 'Out of service', method: 'PUT', suffix: '/status?value=OUT_OF_SERVICE', done: 'is out of service',
      question: (name) => 'Take ' + name + ' out of service?\n\nIts status is overridden to OUT_OF_SERVICE: ' +
        'clients stop calling it after their next registry fetch. Its own heartbeats do not undo this; ' +
        '"Back in service" does.',
    },
    'back-in-service': {
      label: 'Back in service', method: 'DELETE', suffix: '/status?value=UP', done: 'is back in service',
      question: (name) => 'Put ' + name + ' back in service?\n\nThe status override is removed and its status set to UP.',
    },
    'remove-override': {
      label: 'Remove override', method: 'DELETE', suffix: '/status', done: 'has no status override any more',
      question: (name) => 'Remove the status override of ' + name + '?\n\nIts status becomes UNKNOWN until its ' +
        'next heartbeat, which the registry answers with 404 so that the client registers again with the ' +
        'status it reports itself.',
    },
    'deregister': {
      label: 'Deregister', method: 'DELETE', suffix: '', done: 'is deregistered', danger: true,
      question: (name) => 'Deregister ' + name + '?\n\nIts lease is cancelled on every node and clients stop ' +
        'seeing it. If its client is still running, it registers again at its next heartbeat.',
    },
  };

  function actionsFor(i) {
    const names = [];
    if (i.overriddenStatus === 'OUT_OF_SERVICE') names.push('back-in-service');
    else names.push('out-of-service');
    if (i.overriddenStatus) names.push('remove-override');
    names.push('deregister');
    return names;
  }

  async function act(button) {
    const row = button.closest('tr');
    const action = ACTIONS[button.dataset.action];
    const app = row.dataset.app;
    const id = row.dataset.id;
    const name = app + '/' + id;
    if (!action || !window.confirm(action.question(name))) return;
    button.disabled = true;
    const path = '/eureka/apps/' + encodeURIComponent(app) + '/' + encodeURIComponent(id) + action.suffix;
    try {
      const resp = await fetch(url(path), { method: action.method, credentials: 'same-origin' });
      if (resp.status === 404) throw new Error(name + ' is not registered (any more)');
      if (!resp.ok) throw new Error(await problem(resp));
      message(name + ' ' + action.done + '.', 'ok');
    } catch (err) {
      message(action.label + ' failed for ' + name + ': ' + err.message, 'error');
      button.disabled = false;
    }
    refresh();
  }

  function message(text, kind) {
    const m = $('message');
    m.hidden = false;
    m.textContent = text;
    m.className = 'message ' + kind;
  }

  // ---- wiring -----------------------------------------------------------

  document.addEventListener('DOMContentLoaded', () => {
    $('search').addEventListener('input', () => {
      if (state) render();
    });
    $('apps').addEventListener('click', (ev) => {
      const button = ev.target.closest('button[data-action]');
      if (button) act(button);
    });
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) refresh();
    });
    refresh();
    openStream();
  });
})();
