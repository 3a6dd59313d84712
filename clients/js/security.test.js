'use strict';

// eureka-js-client 4.5.0 against Heureka nodes with HTTP basic auth and TLS
// (security_test.go starts them and sets the environment):
//   HEUREKA_AUTH_URL  a node with auth on, e.g. http://127.0.0.1:8761/eureka
//   HEUREKA_TLS_URL   a node with auth and TLS on (https://…)
//   HEUREKA_OPEN_URL  a node with auth off
//   HEUREKA_USER, HEUREKA_PASS  credentials with the read and write roles
//   NODE_EXTRA_CA_CERTS  the TLS node's self-signed certificate, which Node.js
//                        then trusts (the client has no CA option of its own;
//                        requestMiddleware could set `ca` too)
// The credentials go in the service URL, as Spring users write them; the
// client's `request` library turns them into an Authorization: Basic header.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const https = require('node:https');
const { Eureka } = require('eureka-js-client');

const { HEUREKA_AUTH_URL, HEUREKA_TLS_URL, HEUREKA_OPEN_URL, HEUREKA_USER, HEUREKA_PASS } = process.env;

// A logger that keeps the client's lines for a failure message.
function memoryLogger(sink) {
  const log = (level) => (...args) => sink.push(`${level}: ${args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a))).join(' ')}`);
  return { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') };
}

// serviceUrl returns base (…/eureka) with user info and the client's
// "/apps/" suffix.
function serviceUrl(base, user, pass) {
  const u = new URL(base);
  if (user !== undefined) {
    u.username = encodeURIComponent(user);
    u.password = encodeURIComponent(pass);
  }
  return `${u.toString().replace(/\/+$/, '')}/apps/`;
}

function makeClient(url, app, logs) {
  return new Eureka({
    logger: memoryLogger(logs),
    eureka: {
      serviceUrls: { default: [url] },
      maxRetries: 0,
      registryFetchInterval: 200,
      heartbeatInterval: 200,
      fetchRegistry: true,
      registerWithEureka: true,
    },
    instance: {
      app,
      hostName: `${app}.js.test`,
      ipAddr: '127.0.0.71',
      port: 8081,
      vipAddress: `${app}.vip`,
      dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
    },
  });
}

function call(fn) {
  return new Promise((resolve, reject) => fn((err, ...rest) => (err ? reject(err) : resolve(rest))));
}

function waitFor(what, cond, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (cond()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(poll, 50);
    };
    poll();
  });
}

// A client registers, renews, sees itself in its fetched registry, and
// deregisters.
async function lifecycle(base, app, withCredentials = true) {
  const logs = [];
  const url = withCredentials ? serviceUrl(base, HEUREKA_USER, HEUREKA_PASS) : serviceUrl(base);
  const client = makeClient(url, app, logs);
  let heartbeats = 0;
  client.on('heartbeat', () => heartbeats++);
  try {
    await call((cb) => client.start(cb));
    await waitFor('two heartbeats', () => heartbeats >= 2);
    await waitFor('the client caches itself', () => client.getInstancesByAppId(app).length === 1);
    await call((cb) => client.stop(cb));
  } catch (err) {
    client.stop();
    err.message += `\nclient log:\n${logs.join('\n')}`;
    throw err;
  }
}

// One plain request without keep-alive; resolves {status, headers, body}.
function request(url, headers = {}) {
  const mod = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, { headers: { Connection: 'close', ...headers }, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('basic auth: credentials in the service URL', { timeout: 60000 }, async () => {
  assert.ok(HEUREKA_AUTH_URL && HEUREKA_USER && HEUREKA_PASS, 'HEUREKA_AUTH_URL, HEUREKA_USER and HEUREKA_PASS must be set');
  await lifecycle(HEUREKA_AUTH_URL, 'js-auth');
});

test('basic auth: a wrong password gets 401', { timeout: 60000 }, async () => {
  const logs = [];
  const client = makeClient(serviceUrl(HEUREKA_AUTH_URL, HEUREKA_USER, 'wrong'), 'js-denied', logs);
  await assert.rejects(call((cb) => client.start(cb)), /registration FAILED: status: 401 body: unauthorized: wrong user name or password/);
  client.stop();

  const res = await request(`${HEUREKA_AUTH_URL}/apps`);
  assert.equal(res.status, 401);
  assert.equal(res.headers['www-authenticate'], 'Basic realm="heureka", charset="UTF-8"');
  assert.match(res.body, /requires HTTP basic credentials/);
  assert.equal((await request(new URL('/healthz', HEUREKA_AUTH_URL).toString())).status, 200, 'probes stay open');
});

test('auth off: the client works, with or without credentials', { timeout: 60000 }, async () => {
  assert.ok(HEUREKA_OPEN_URL, 'HEUREKA_OPEN_URL must be set');
  await lifecycle(HEUREKA_OPEN_URL, 'js-open');
  await lifecycle(HEUREKA_OPEN_URL, 'js-open-anonymous', false);
});

test('TLS with basic auth', { timeout: 60000 }, async () => {
  assert.ok(HEUREKA_TLS_URL && HEUREKA_TLS_URL.startsWith('https://'), 'HEUREKA_TLS_URL must be an https URL');
  assert.ok(process.env.NODE_EXTRA_CA_CERTS, 'NODE_EXTRA_CA_CERTS must name the node certificate');
  await lifecycle(HEUREKA_TLS_URL, 'js-tls');
  const res = await request(`${HEUREKA_TLS_URL}/apps`, { Accept: 'application/json' });
  assert.equal(res.status, 401, 'TLS does not replace auth');
});
