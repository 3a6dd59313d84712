'use strict';

// Drives eureka-js-client 4.5.0 against a running Heureka node.
// HEUREKA_URL is the node's Eureka service URL, e.g. http://127.0.0.1:8761/eureka
// (js_client_test.go starts a node and sets it). See
// shared/spec/clients/eureka-js-client.md for what the client sends and expects.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { Eureka } = require('eureka-js-client');

const BASE = process.env.HEUREKA_URL;
const WAIT_MS = 20000; // generous: every interval below is well under a second

// ---------------------------------------------------------------- helpers

// A logger for the client that keeps everything and prints nothing; the
// lines are printed if the test fails.
function memoryLogger(name, sink) {
  const log = (level) => (...args) => {
    const text = args
      .map((a) => (a instanceof Error ? a.stack || a.message : typeof a === 'string' ? a : JSON.stringify(a)))
      .join(' ');
    sink.push(`${new Date().toISOString()} [${name}] ${level}: ${text}`);
  };
  return { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') };
}

// Resolves once cond() is truthy, polling every 50 ms; rejects after timeout
// with the description and the last state.
function waitFor(description, cond, timeoutMs = WAIT_MS, state = () => '') {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      let ok = false;
      try {
        ok = cond();
      } catch (err) {
        reject(err);
        return;
      }
      if (ok) {
        resolve(ok);
      } else if (Date.now() > deadline) {
        reject(new Error(`timed out after ${timeoutMs} ms waiting for: ${description}; state: ${state()}`));
      } else {
        setTimeout(poll, 50);
      }
    };
    poll();
  });
}

// Resolves with the arguments of the next `event` of emitter.
function nextEvent(emitter, event, timeoutMs = WAIT_MS) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.removeListener(event, onEvent);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for event '${event}'`));
    }, timeoutMs);
    function onEvent(...args) {
      clearTimeout(timer);
      resolve(args);
    }
    emitter.once(event, onEvent);
  });
}

// Calls fn(callback) and resolves with the callback's result.
function callbackToPromise(fn) {
  return new Promise((resolve, reject) => {
    fn((err, ...rest) => (err ? reject(err) : resolve(rest)));
  });
}

// One plain HTTP request with no keep-alive; resolves {status, body}.
function httpRequest(method, url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { Connection: 'close', ...headers }, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.end();
  });
}

// A client with the settings the brief asks for, plus counters of what it
// did: registryUpdated events (emitted by full fetches only), the URIs it
// requested, and every delta entry it applied.
function makeClient(name, instance, logs) {
  const url = new URL(BASE);
  const servicePath = `${url.pathname.replace(/\/+$/, '')}/apps/`; // "/eureka/apps/"
  const stats = { registryUpdated: 0, heartbeats: 0, registered: 0, requests: [], deltaEntries: [] };
  const client = new Eureka({
    logger: memoryLogger(name, logs),
    // eureka-js-client reads shouldUseDelta from the top level of its
    // config (config.shouldUseDelta), not from config.eureka.
    shouldUseDelta: true,
    requestMiddleware: (opts, done) => {
      stats.requests.push(`${(opts.method || 'GET').toUpperCase()} ${opts.uri}`);
      done(opts);
    },
    eureka: {
      host: url.hostname,
      port: Number(url.port),
      servicePath,
      maxRetries: 0,
      registryFetchInterval: 200,
      heartbeatInterval: 300,
      shouldUseDelta: true,
      fetchRegistry: true,
      registerWithEureka: true,
    },
    instance,
  });
  client.on('registryUpdated', () => stats.registryUpdated++);
  client.on('heartbeat', () => stats.heartbeats++);
  client.on('registered', () => stats.registered++);
  // Record the delta entries the client applies (after its own handling
  // has run, so its behaviour is unchanged).
  const handleDelta = client.handleDelta.bind(client);
  client.handleDelta = (cache, applications) => {
    handleDelta(cache, applications);
    for (const app of Array.isArray(applications) ? applications : [applications]) {
      for (const inst of app.instance) {
        stats.deltaEntries.push({ actionType: inst.actionType, app: inst.app, hostName: inst.hostName, status: inst.status });
      }
    }
  };
  return { client, stats };
}

function fullFetches(stats) {
  return stats.requests.filter((r) => r === 'GET ').length;
}

function deltaFetches(stats) {
  return stats.requests.filter((r) => r === 'GET delta').length;
}

function describeCache(client) {
  return JSON.stringify({
    app: Object.fromEntries(Object.entries(client.cache.app).map(([k, v]) => [k, v.map((i) => `${i.hostName}:${i.port && i.port.$}:${i.status}`)])),
    vip: Object.fromEntries(Object.entries(client.cache.vip).map(([k, v]) => [k, v.map((i) => `${i.hostName}:${i.port && i.port.$}:${i.status}`)])),
  });
}

// The cached instance of client with the given hostName in app (upper-cased
// by the client), or undefined.
function cached(client, appId, hostName) {
  return (client.cache.app[appId.toUpperCase()] || []).find((i) => i.hostName === hostName);
}

// ------------------------------------------------------------------ test

test('eureka-js-client 4.5.0 against heureka', { timeout: 90000 }, async () => {
  assert.ok(BASE, 'HEUREKA_URL must be set (e.g. http://127.0.0.1:8761/eureka)');
  const logs = [];
  const clients = [];
  try {
    // Instance A: bare numeric port, instanceId set, numeric metadata.
    const alphaInstance = {
      instanceId: 'js-alpha-1',
      app: 'js-alpha', // lower case, as in the client's README
      hostName: 'alpha1.js.test',
      ipAddr: '127.0.0.61',
      port: 8081,
      vipAddress: 'js-alpha.vip',
      statusPageUrl: 'http://alpha1.js.test:8081/info',
      healthCheckUrl: 'http://alpha1.js.test:8081/health',
      homePageUrl: 'http://alpha1.js.test:8081/',
      dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
      metadata: { version: '1.0.0', weight: 10, ratio: 0.5 },
    };
    // Instance B: port object with a boolean @enabled, no instanceId (the id
    // is then the hostName).
    const betaInstance = {
      app: 'js-beta',
      hostName: 'beta1.js.test',
      ipAddr: '127.0.0.62',
      port: { $: 8080, '@enabled': true },
      vipAddress: 'js-beta.vip',
      statusPageUrl: 'http://beta1.js.test:8080/info',
      healthCheckUrl: 'http://beta1.js.test:8080/health',
      homePageUrl: 'http://beta1.js.test:8080/',
      dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
      metadata: { weight: 20 },
    };

    // ---- A starts: POST 204 → 'registered', then heartbeats (PUT 200).
    const a = makeClient('alpha', alphaInstance, logs);
    clients.push(a);
    const aRegistered = nextEvent(a.client, 'registered');
    await callbackToPromise((cb) => a.client.start(cb));
    await aRegistered;
    assert.equal(a.stats.registered, 1, 'A registered once');
    // The first full fetch is part of start(). (Under load a timer-driven
    // fetch can overlap it; until one full fetch has answered, the client
    // keeps fetching the full registry, so there may be more than one.)
    assert.ok(a.stats.registryUpdated >= 1, 'A did its first full fetch');
    await waitFor('A sends heartbeats that get 200', () => a.stats.heartbeats >= 2);
    assert.equal(a.stats.registered, 1, 'no heartbeat got 404 (which makes the client re-register)');

    // ---- A's cache shows A by app id (any case) and by VIP.
    await waitFor('A caches itself by app id and VIP', () => cached(a.client, 'js-alpha', 'alpha1.js.test')
      && a.client.getInstancesByVipAddress('js-alpha.vip').length === 1, WAIT_MS, () => describeCache(a.client));
    for (const appId of ['js-alpha', 'JS-ALPHA', 'Js-Alpha']) {
      const list = a.client.getInstancesByAppId(appId);
      assert.equal(list.length, 1, `getInstancesByAppId(${appId})`);
    }
    const aSelf = a.client.getInstancesByVipAddress('js-alpha.vip')[0];
    assert.equal(aSelf.app, 'JS-ALPHA', 'app is upper-cased by the server');
    assert.equal(aSelf.instanceId, 'js-alpha-1');
    assert.equal(aSelf.hostName, 'alpha1.js.test');
    assert.equal(aSelf.status, 'UP');
    assert.equal(aSelf.vipAddress, 'js-alpha.vip');
    assert.deepEqual(aSelf.port, { $: 8081, '@enabled': 'true' }, 'a bare port comes back as an enabled port object');
    assert.equal(aSelf.dataCenterInfo.name, 'MyOwn');
    assert.equal(aSelf.metadata.weight, '10', 'numeric metadata comes back as text');
    assert.equal(aSelf.metadata.ratio, '0.5', 'numeric metadata comes back as text');
    assert.equal(aSelf.metadata.version, '1.0.0');
    assert.equal(aSelf.leaseInfo.renewalIntervalInSecs, 30, 'no leaseInfo sent: default 30');
    assert.equal(aSelf.leaseInfo.durationInSecs, 90, 'no leaseInfo sent: default 90');

    // ---- B starts. Its first fetch is full; A sees B through deltas
    // (A had its full registry before B registered).
    const b = makeClient('beta', betaInstance, logs);
    clients.push(b);
    const bRegistered = nextEvent(b.client, 'registered');
    await callbackToPromise((cb) => b.client.start(cb));
    await bRegistered;
    assert.ok(b.stats.registryUpdated >= 1, 'B did its first full fetch');
    await waitFor('B sends heartbeats that get 200', () => b.stats.heartbeats >= 1);

    await waitFor('A sees B through a delta ADDED entry', () => cached(a.client, 'js-beta', 'beta1.js.test')
      && a.stats.deltaEntries.some((e) => e.actionType === 'ADDED' && e.hostName === 'beta1.js.test'),
    WAIT_MS, () => `${describeCache(a.client)} deltas=${JSON.stringify(a.stats.deltaEntries)}`);
    const bSeenByA = cached(a.client, 'JS-BETA', 'beta1.js.test');
    assert.equal(bSeenByA.app, 'JS-BETA');
    assert.deepEqual(bSeenByA.port, { $: 8080, '@enabled': 'true' }, '@enabled true (boolean) comes back as "true"');
    assert.equal(bSeenByA.metadata.weight, '20', 'numeric metadata comes back as text');
    assert.equal(a.client.getInstancesByVipAddress('js-beta.vip').length, 1, 'A finds B by VIP');

    // B sees A (first from its full fetch) and keeps fetching deltas.
    await waitFor('B caches A', () => cached(b.client, 'js-alpha', 'alpha1.js.test')
      && b.client.getInstancesByVipAddress('js-alpha.vip').length === 1, WAIT_MS, () => describeCache(b.client));
    // From here on both clients only fetch deltas: every full fetch they
    // sent has answered, and they have moved on to GET …/apps/delta.
    const settled = (st) => deltaFetches(st) >= 2 && st.registryUpdated === fullFetches(st);
    await waitFor('A and B fetch deltas only', () => settled(a.stats) && settled(b.stats), WAIT_MS,
      () => JSON.stringify({ a: a.stats.requests, b: b.stats.requests }));
    const fullBefore = { a: fullFetches(a.stats), b: fullFetches(b.stats), bUpdated: b.stats.registryUpdated };

    // ---- A plain PUT …/status?value=OUT_OF_SERVICE reaches B through the
    // delta as MODIFIED: the cached A turns OUT_OF_SERVICE. (A MODIFIED entry
    // replaces the cached copy without the UP filter; a full fetch would drop
    // A instead, so the cached OUT_OF_SERVICE copy proves the delta path.)
    const put = await httpRequest('PUT', `${BASE}/apps/js-alpha/js-alpha-1/status?value=OUT_OF_SERVICE`);
    assert.equal(put.status, 200, `PUT status: ${put.body}`);
    await waitFor('B sees A OUT_OF_SERVICE', () => {
      const inst = cached(b.client, 'js-alpha', 'alpha1.js.test');
      return inst && inst.status === 'OUT_OF_SERVICE';
    }, WAIT_MS, () => `${describeCache(b.client)} deltas=${JSON.stringify(b.stats.deltaEntries)}`);
    assert.ok(b.stats.deltaEntries.some((e) => e.actionType === 'MODIFIED' && e.hostName === 'alpha1.js.test'
      && e.status === 'OUT_OF_SERVICE'), `a MODIFIED entry for A: ${JSON.stringify(b.stats.deltaEntries)}`);
    const vipCopy = b.client.getInstancesByVipAddress('js-alpha.vip');
    assert.equal(vipCopy.length, 1, 'the VIP cache keeps A too');
    assert.equal(vipCopy[0].status, 'OUT_OF_SERVICE');
    // The override survives A's own heartbeats, which carry no status.
    const beatsBefore = a.stats.heartbeats;
    await waitFor('A keeps heartbeating', () => a.stats.heartbeats >= beatsBefore + 2);
    const direct = await httpRequest('GET', `${BASE}/apps/JS-ALPHA/js-alpha-1`, { Accept: 'application/json' });
    assert.equal(direct.status, 200, direct.body);
    assert.equal(JSON.parse(direct.body).instance.status, 'OUT_OF_SERVICE', 'override survives plain renews');
    assert.equal(a.stats.registered, 1, 'A never had to re-register');

    // ---- A stops: DELETE 200 → 'deregistered'; B's cache drops A through
    // the delta's DELETED entry.
    // Stop right after a heartbeat answer, so that no heartbeat is in flight:
    // one answered 404 after the DELETE would make the client re-register.
    await nextEvent(a.client, 'heartbeat');
    const aDeregistered = nextEvent(a.client, 'deregistered');
    await callbackToPromise((cb) => a.client.stop(cb));
    await aDeregistered;
    clients.splice(clients.indexOf(a), 1);
    await waitFor('B drops A', () => !cached(b.client, 'js-alpha', 'alpha1.js.test')
      && b.client.getInstancesByVipAddress('js-alpha.vip').length === 0
      && b.client.getInstancesByAppId('js-alpha').length === 0,
    WAIT_MS, () => `${describeCache(b.client)} deltas=${JSON.stringify(b.stats.deltaEntries)}`);
    assert.ok(b.stats.deltaEntries.some((e) => e.actionType === 'DELETED' && e.hostName === 'alpha1.js.test'),
      `a DELETED entry for A: ${JSON.stringify(b.stats.deltaEntries)}`);
    assert.ok(cached(b.client, 'js-beta', 'beta1.js.test'), 'B still caches itself');
    const gone = await httpRequest('GET', `${BASE}/apps/js-alpha/js-alpha-1`, { Accept: 'application/json' });
    assert.equal(gone.status, 404, 'A is gone from the server');

    // The status change and the deregistration reached B through deltas:
    // no full fetch since, and no fetch error (a failed delta would freeze
    // the client's cache, since it never falls back to a full fetch).
    assert.equal(fullFetches(b.stats), fullBefore.b, `B did no full fetch since: ${JSON.stringify(b.stats.requests)}`);
    assert.equal(b.stats.registryUpdated, fullBefore.bUpdated, 'registryUpdated fires for full fetches only');
    assert.equal(fullFetches(a.stats), fullBefore.a, `A did no full fetch since: ${JSON.stringify(a.stats.requests)}`);
    const fetchErrors = logs.filter((l) => /Error fetching|Unknown delta actionType|FAILED/.test(l));
    assert.deepEqual(fetchErrors, [], 'no fetch, delta or heartbeat errors');

    // ---- B stops cleanly too.
    await nextEvent(b.client, 'heartbeat');
    await callbackToPromise((cb) => b.client.stop(cb));
    clients.splice(clients.indexOf(b), 1);
    const bGone = await httpRequest('GET', `${BASE}/apps/js-beta/beta1.js.test`, { Accept: 'application/json' });
    assert.equal(bGone.status, 404, 'B is gone from the server');
  } catch (err) {
    console.error('--- eureka-js-client logs ---');
    for (const line of logs) console.error(line);
    console.error('--- end of logs ---');
    throw err;
  } finally {
    // Stop the timers of any client left running so that node can exit.
    for (const { client } of clients) {
      clearInterval(client.heartbeat);
      clearInterval(client.registryFetch);
    }
  }
});
