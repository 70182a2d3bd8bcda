'use strict';
// Hand-written proof (not generated): the built package runs in n8n-core's engine against the
// practiceflow sandbox on 127.0.0.1. tests/export/test_n8n.py builds the package, starts the
// sandbox and passes PF_BASE_URL, PF_ADMIN_URL, PF_ADMIN_TOKEN, PF_CLIENT_ID,
// PF_CLIENT_SECRET and N8N_USER_FOLDER (a temp dir).

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');

const env = process.env;
const needed = ['PF_BASE_URL', 'PF_ADMIN_URL', 'PF_ADMIN_TOKEN', 'PF_CLIENT_ID', 'PF_CLIENT_SECRET', 'N8N_USER_FOLDER'];
const missing = needed.filter((name) => !env[name]);
if (missing.length) throw new Error(`needs ${missing.join(', ')} (run through pytest tests/export/test_n8n.py)`);

const h = require('./harness');

const credentials = {
  sandbox: {
    type: 'practiceflowApi',
    data: { clientId: env.PF_CLIENT_ID, clientSecret: env.PF_CLIENT_SECRET, region: 'anz', baseUrl: env.PF_BASE_URL },
  },
};

const admin = async (method, route, body) => {
  const response = await fetch(`${env.PF_ADMIN_URL}${route}`, {
    method,
    headers: { 'X-Admin-Token': env.PF_ADMIN_TOKEN, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(response.ok, `admin ${method} ${route}: ${response.status}`);
  return response.json();
};
const requestsSince = async (count) => (await admin('GET', '/_admin/requests')).slice(count);
const requestCount = async () => (await admin('GET', '/_admin/requests')).length;
const queryOf = (row) => new URLSearchParams(row.query || '');

const createClient = async (name) => {
  const node = h.makeNode('practiceflow', 'Create client', {
    resource: 'client',
    operation: 'create_client',
    entityName: name,
    additionalFields: { entityType: 'Company', clientStatus: 'Active', email: 'n8n-proof@example.com', physicalAddress__city: 'Perth' },
  });
  return await h.executeNode(node, h.additionalData(credentials));
};

test('create_client through WorkflowExecute reaches the sandbox with the credential headers', async () => {
  const before = await requestCount();
  const items = await createClient('n8n Proof Pty Ltd');
  assert.equal(items.length, 1);
  const created = items[0].json;
  assert.match(created.entityKey, /^[0-9a-f-]{36}$/);
  const seen = await requestsSince(before);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].method, 'POST');
  assert.match(seen[0].path, /\/api\/v1\/entities$/);
  assert.equal(seen[0].clientId, env.PF_CLIENT_ID, 'the X-SVC-Auth-ID header identified the client');
  const rows = await admin('GET', '/_admin/records/entities');
  const row = rows.find((entity) => entity.entityKey === created.entityKey);
  assert.ok(row, 'the sandbox stored the client');
  assert.equal(row.entityName, 'n8n Proof Pty Ltd');
  assert.ok(JSON.stringify(row).includes('Perth'), 'the nested address reached the sandbox');
});

test('new_client polling: baseline, one new client, then nothing new from the stored cursor', async () => {
  const data = h.additionalData(credentials);
  const node = h.makeNode('practiceflowPollTrigger', 'Poll', { trigger: 'new_client' });
  const store = {};

  const first = await h.pollOnce(node, data, store);
  assert.deepEqual(first.items, [], 'the first poll only remembers (baseline)');
  const state = first.staticData['node:Poll'].state;
  assert.ok(state.cursor && state.cursor !== '*', `a cursor was stored: ${JSON.stringify(state.cursor)}`);
  assert.ok(state.known.length > 0, 'known keys were stored');

  await new Promise((resolve) => setTimeout(resolve, 1100)); // a later lastUpdated second
  const created = (await createClient('n8n Poll Proof Ltd'))[0].json;

  let before = await requestCount();
  const second = await h.pollOnce(node, data, store);
  let seen = await requestsSince(before);
  assert.ok(queryOf(seen[0]).get('lastUpdated'), 'the poll sent the stored cursor');
  assert.deepEqual(second.items.map((item) => item.json.entityKey), [created.entityKey]);
  const moved = second.staticData['node:Poll'].state.cursor;
  assert.ok(Date.parse(moved) >= Date.parse(state.cursor), 'the cursor moved forward');

  before = await requestCount();
  const third = await h.pollOnce(node, data, store);
  seen = await requestsSince(before);
  assert.deepEqual(third.items, [], 'nothing new since the stored cursor');
  assert.ok(seen.length >= 1);
  const sent = queryOf(seen[0]).get('lastUpdated');
  assert.equal(Date.parse(sent), Math.floor(Date.parse(moved) / 1000) * 1000, 'asked from the stored cursor (to the second)');
  assert.equal(third.staticData['node:Poll'].state.cursor, moved);
});

test('proposal_accepted webhook: checkExists / create subscribe, a signed delivery, delete unsubscribes', async () => {
  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks) });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const base = `http://127.0.0.1:${server.address().port}/webhook`;
    const data = h.additionalData(credentials, base);
    const node = h.makeNode('practiceflowTrigger', 'Webhook', { trigger: 'proposal_accepted' }, { webhookId: 'proof-hook' });
    const workflow = h.makeWorkflow(node);

    assert.equal(await h.webhookMethod(workflow, node, data, 'checkExists'), false, 'nothing subscribed yet');
    assert.equal(await h.webhookMethod(workflow, node, data, 'create'), true);
    const stored = workflow.staticData['node:Webhook'];
    assert.ok(stored.webhookId && stored.webhookSecret, 'id and secret kept in static data');
    let subscriptions = await admin('GET', '/_admin/records/subscriptions');
    const row = subscriptions.find((s) => s.id === stored.webhookId);
    assert.ok(row, 'the sandbox stored the subscription');
    assert.equal(row.event, 'proposal.accepted');
    assert.equal(row.url, `${base}/proof-hook/webhook`);
    assert.equal(await h.webhookMethod(workflow, node, data, 'checkExists'), true, 'found on record');

    const proposals = await admin('GET', '/_admin/records/proposals');
    const proposal = proposals.find((p) => p.status !== 'Accepted');
    await admin('POST', `/_admin/proposals/${proposal.proposalKey}/accept`);
    for (let i = 0; i < 200 && received.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 25));
    assert.equal(received.length, 1, 'the sandbox delivered the event');

    const respond = () => {
      const response = { statusCode: 200, sent: undefined };
      response.status = (code) => { response.statusCode = code; return response; };
      response.json = (body) => { response.sent = body; return response; };
      response.end = () => response;
      return response;
    };
    const request = (headers, raw) => ({ headers, rawBody: raw, body: JSON.parse(raw.toString('utf8')), query: {}, params: {} });
    const delivery = received[0];
    const answer = await h.deliver(workflow, node, data, request(delivery.headers, delivery.raw), respond());
    assert.ok(answer.workflowData, 'a verified delivery starts the workflow');
    assert.equal(answer.workflowData[0][0].json.proposalKey, proposal.proposalKey);

    const forgedResponse = respond();
    const forged = { ...delivery.headers, 'x-svc-signature': `sha256=${'0'.repeat(64)}` };
    const refused = await h.deliver(workflow, node, data, request(forged, delivery.raw), forgedResponse);
    assert.equal(refused.workflowData, undefined, 'a forged signature starts nothing');
    assert.equal(forgedResponse.statusCode, 401);

    assert.equal(await h.webhookMethod(workflow, node, data, 'delete'), true);
    subscriptions = await admin('GET', '/_admin/records/subscriptions');
    assert.equal(subscriptions.find((s) => s.id === stored.webhookId), undefined, 'unsubscribed on the sandbox');
    assert.equal(workflow.staticData['node:Webhook'].webhookId, undefined, 'static data cleared');
    assert.equal(await h.webhookMethod(workflow, node, data, 'checkExists'), false);
  } finally {
    server.close();
  }
});
