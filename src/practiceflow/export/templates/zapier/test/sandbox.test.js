'use strict';
// The app's own test, shipped with every export (practiceflow/export/templates/zapier/test):
// zapier-platform-core's createAppTester runs the generated app against the practiceflow
// sandbox on 127.0.0.1. tests/export/test_zapier.py (and the product proof, which runs it
// through `zapier-platform test`)
// starts the sandbox and passes PF_BASE_URL, PF_ADMIN_URL, PF_ADMIN_TOKEN, PF_CLIENT_ID and
// PF_CLIENT_SECRET; run with NODE_ENV=test so core's output checks throw instead of logging.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');

const zapier = require('zapier-platform-core');

const appDir = process.env.PF_APP_DIR || path.join(__dirname, '..');
const App = require(appDir);
const appTester = zapier.createAppTester(App);

const env = process.env;
const needed = ['PF_BASE_URL', 'PF_ADMIN_URL', 'PF_ADMIN_TOKEN', 'PF_CLIENT_ID', 'PF_CLIENT_SECRET'];
const missing = needed.filter((name) => !env[name]);
const skip = missing.length ? `needs ${missing.join(', ')} (run through pytest tests/export)` : false;
const HOOK = env.PF_HOOK_TRIGGER || 'proposal_accepted';
const POLL = env.PF_POLL_TRIGGER || 'new_client';

const authData = () => ({
  client_id: env.PF_CLIENT_ID,
  client_secret: env.PF_CLIENT_SECRET,
  region: 'anz',
  base_url: env.PF_BASE_URL,
});

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

test('sandbox proofs', { skip }, async (t) => {
  assert.equal(env.NODE_ENV, 'test', 'run with NODE_ENV=test so core output checks throw');

  await t.test('connection test calls auth/validate with the credential headers', async () => {
    const before = (await admin('GET', '/_admin/requests')).length;
    const result = await appTester(App.authentication.test, { authData: authData() });
    assert.equal(result.authenticated, true);
    assert.equal(result.canWrite, true);
    const seen = await requestsSince(before);
    assert.equal(seen.length, 1);
    assert.match(seen[0].path, /\/api\/v1\/auth\/validate$/);
    assert.equal(seen[0].clientId, env.PF_CLIENT_ID);
  });

  let created;
  await t.test('create_client creates a client with its nested address', async () => {
    const inputData = {
      entityName: 'Zapier Proof Pty Ltd',
      entityType: 'Company',
      clientStatus: 'Active',
      email: 'proof@example.com',
      physicalAddress__city: 'Sydney',
      physicalAddress__postcode: '2000',
    };
    created = await appTester(App.creates.create_client.operation.perform, {
      authData: authData(),
      inputData,
    });
    assert.match(created.entityKey, /^[0-9a-f-]{36}$/);
    const rows = await admin('GET', '/_admin/records/entities');
    const row = rows.find((entity) => entity.entityKey === created.entityKey);
    assert.ok(row, 'the sandbox stored the client');
    assert.equal(row.entityName, 'Zapier Proof Pty Ltd');
    assert.equal(JSON.stringify(row).includes('Sydney'), true, 'the address reached the sandbox');
  });

  await t.test('get_client (a search) returns the client as a one-item list', async () => {
    const results = await appTester(App.searches.get_client.operation.perform, {
      authData: authData(),
      inputData: { entityKey: created.entityKey },
    });
    assert.equal(results.length, 1);
    assert.equal(results[0].entityKey, created.entityKey);
    assert.equal(results[0].entityName, 'Zapier Proof Pty Ltd');
  });

  await t.test('get_client with an unknown key finds nothing ([]), not an error', async () => {
    const results = await appTester(App.searches.get_client.operation.perform, {
      authData: authData(),
      inputData: { entityKey: '00000000-0000-4000-8000-000000000000' },
    });
    assert.deepEqual(results, []);
  });

  await t.test('search-or-create on find_clients creates exactly one client, then finds it', async () => {
    // What Zapier does for a search-or-create step: search; create only when [] came back.
    const marker = `zap-soc-${Date.now()}`;
    const searchOrCreate = async () => {
      const found = await appTester(App.searches.find_clients.operation.perform, {
        authData: authData(),
        inputData: { externalSystemID: marker },
      });
      assert.ok(Array.isArray(found));
      if (found.length) return { found: found[0], created: false };
      const made = await appTester(App.creates.create_client.operation.perform, {
        authData: authData(),
        inputData: { entityName: 'Search Or Create Ltd', entityType: 'Company', externalSystemID: marker },
      });
      return { found: made, created: true };
    };
    const first = await searchOrCreate();
    assert.equal(first.created, true, 'no client matched: the step creates one');
    const second = await searchOrCreate();
    assert.equal(second.created, false, 'the client now matches: nothing is created');
    assert.equal(second.found.entityKey, first.found.entityKey, 'the search returns the record itself');
    const rows = (await admin('GET', '/_admin/records/entities')).filter((row) => row.externalSystemID === marker);
    assert.equal(rows.length, 1, 'exactly one client carries the marker');
  });

  const apiList = async (route) => {
    const response = await fetch(`${env.PF_BASE_URL}${route}`, {
      headers: { 'X-SVC-Auth-ID': env.PF_CLIENT_ID, 'X-SVC-Auth-Key': env.PF_CLIENT_SECRET },
    });
    assert.ok(response.ok, `${route}: ${response.status}`);
    const data = await response.json();
    return Array.isArray(data) ? data : Object.values(data).find(Array.isArray);
  };

  await t.test('a search with a limit above one page reads every page of the list', async () => {
    // The API's own pages, read directly: what every page holds together.
    const every = [];
    for (let page = 1; ; page += 1) {
      const rows = await apiList(`/api/v1/entities?pageNumber=${page}`);
      every.push(...rows);
      if (rows.length === 0 || (page > 1 && rows.length < every.length / page)) break;
    }
    assert.ok(every.length > 100, `the sandbox lists ${every.length} clients: more than one page`);
    const before = (await admin('GET', '/_admin/requests')).length;
    const found = await appTester(App.searches.find_clients.operation.perform, {
      authData: authData(),
      inputData: { limit: 100000 },
    });
    assert.deepEqual(found.map((row) => row.entityKey).sort(), every.map((row) => row.entityKey).sort());
    const pages = (await requestsSince(before)).map((row) => new URLSearchParams(row.query || '').get('pageNumber'));
    assert.ok(pages.includes('2'), `pages read: ${pages}`);
  });

  await t.test('dynamic dropdowns show the sandbox\'s own lists', async () => {
    const dropdown = (operation, key) => {
      const field = App[operation.kind][operation.key].operation.inputFields.find((f) => f.key === key);
      assert.ok(field && field.dynamic, `${operation.key}.${key} is a dynamic dropdown`);
      const [trigger, idField, labelField] = field.dynamic.split('.');
      assert.ok(App.triggers[trigger], `${field.dynamic} names a trigger of the app`);
      assert.equal(App.triggers[trigger].display.hidden, true);
      return { trigger, idField, labelField };
    };
    const cases = [
      [{ kind: 'creates', key: 'create_lead' }, 'entityType', '/api/v1/settings/entity-types', (r) => r.name],
      [{ kind: 'creates', key: 'create_lead' }, 'leadSource', '/api/v1/settings/lead-sources', (r) => r.name],
      [{ kind: 'creates', key: 'send_eform' }, 'templateId', '/api/v1/eforms/templates?pageSize=100', (r) => String(r.formTemplateId)],
    ];
    for (const [operation, key, route, valueOf] of cases) {
      const { trigger, idField, labelField } = dropdown(operation, key);
      const options = await appTester(App.triggers[trigger].operation.perform, { authData: authData(), inputData: {} });
      const expected = (await apiList(route)).map(valueOf);
      assert.deepEqual(options.map((o) => o[idField]), expected, `${operation.key}.${key}`);
      for (const option of options) assert.ok(option[labelField], 'every option has a label');
    }
  });

  await t.test('download_bill_pdf gives a Zapier file whose hydrator fetches the PDF', async () => {
    const bill = (await admin('GET', '/_admin/records/bills'))[0];
    const [record] = await appTester(App.searches.download_bill_pdf.operation.perform, {
      authData: authData(),
      inputData: { billingID: String(bill.billingID) },
    });
    assert.equal(record.contentType, 'application/pdf');
    assert.equal(record.fileName, `bill-${bill.billingID}.pdf`);
    assert.match(record.file, /^hydrate\|\|\|.*\|\|\|hydrate$/, 'a dehydrated file pointer');
    const pointer = JSON.parse(record.file.split('|||')[1]);
    assert.equal(pointer.method, 'hydrators.downloadFile');
    assert.deepEqual(pointer.bundle, {
      path: `/api/v1/bills/${bill.billingID}/pdf`,
      fileName: `bill-${bill.billingID}.pdf`,
      contentType: 'application/pdf',
    });
    // Zapier runs the hydrator when a step uses the file: it fetches the PDF and stashes it
    // in Zapier's file store, which needs Zapier's service (a deploy key): offline, core
    // refuses to run it, which is as far as a test without Zapier's account can go.
    await assert.rejects(
      appTester(App.hydrators.downloadFile, { authData: authData(), inputData: pointer.bundle }),
      /ZAPIER_DEPLOY_KEY/,
    );
  });

  await t.test('every REST hook has performList giving items with an id', async () => {
    for (const trigger of Object.values(App.triggers)) {
      if (trigger.operation.type !== 'hook') continue;
      assert.equal(typeof trigger.operation.performList, 'function', trigger.key);
      if (trigger.key === HOOK) continue; // read from the sandbox below
      const listed = await appTester(trigger.operation.performList, { authData: authData(), inputData: {} });
      assert.ok(listed.length >= 1 && listed.every((item) => item.id), trigger.key);
    }
  });

  await t.test(`${HOOK}: REST hook subscribe, perform a real delivery, performList, unsubscribe`, async () => {
    const trigger = App.triggers[HOOK];
    assert.ok(trigger, `no trigger ${HOOK}`);
    const received = [];
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk) => { raw += chunk; });
      req.on('end', () => {
        received.push({ headers: req.headers, content: raw });
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const targetUrl = `http://127.0.0.1:${server.address().port}/hook`;
    try {
      const subscribeData = await appTester(trigger.operation.performSubscribe, {
        authData: authData(),
        inputData: {},
        targetUrl,
      });
      assert.ok(subscribeData.id, 'subscribe returned an id');
      assert.ok(subscribeData.webhookSecret, 'subscribe returned the secret');
      let subscriptions = await admin('GET', '/_admin/records/subscriptions');
      const row = subscriptions.find((s) => s.id === subscribeData.id);
      assert.ok(row, 'the sandbox stored the subscription');
      assert.equal(row.url, targetUrl);
      assert.equal(row.event, trigger.operation.sample && 'proposal.accepted');

      const proposals = await admin('GET', '/_admin/records/proposals');
      const proposal = proposals.find((p) => p.status !== 'Accepted');
      await admin('POST', `/_admin/proposals/${proposal.proposalKey}/accept`);
      for (let i = 0; i < 200 && received.length === 0; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      assert.equal(received.length, 1, 'the sandbox delivered the event');
      const delivery = received[0];
      const events = await appTester(trigger.operation.perform, {
        authData: authData(),
        inputData: {},
        subscribeData,
        cleanedRequest: JSON.parse(delivery.content),
        rawRequest: { headers: delivery.headers, content: delivery.content },
      });
      assert.equal(events.length, 1);
      assert.ok(events[0].id, 'the event has an id');
      assert.equal(events[0].proposalKey, proposal.proposalKey);

      const forged = { ...delivery.headers, 'x-svc-signature': `sha256=${'0'.repeat(64)}` };
      await assert.rejects(
        appTester(trigger.operation.perform, {
          authData: authData(),
          inputData: {},
          subscribeData,
          cleanedRequest: JSON.parse(delivery.content),
          rawRequest: { headers: forged, content: delivery.content },
        }),
        /signature/,
      );

      // Proposals are listed per client: without the client, the module's sample.
      const sampled = await appTester(trigger.operation.performList, { authData: authData(), inputData: {} });
      assert.deepEqual(sampled, [trigger.operation.sample]);
      const listed = await appTester(trigger.operation.performList, {
        authData: authData(),
        inputData: { entityKey: proposal.entityKey },
      });
      assert.ok(Array.isArray(listed));
      assert.ok(listed.length >= 1, 'performList finds the accepted proposal');
      for (const item of listed) assert.ok(item.id, 'every performList result has an id');
      assert.ok(listed.some((item) => item.proposalKey === proposal.proposalKey));

      await appTester(trigger.operation.performUnsubscribe, { authData: authData(), subscribeData });
      subscriptions = await admin('GET', '/_admin/records/subscriptions');
      assert.ok(!subscriptions.some((s) => s.id === subscribeData.id), 'unsubscribed');
    } finally {
      server.close();
    }
  });

  await t.test(`${POLL}: the polling trigger returns the new client with a stable id`, async () => {
    const trigger = App.triggers[POLL];
    assert.ok(trigger, `no trigger ${POLL}`);
    assert.equal(trigger.operation.type, 'polling');
    const first = await appTester(trigger.operation.perform, { authData: authData(), inputData: {} });
    assert.ok(Array.isArray(first) && first.length >= 1);
    for (const item of first) assert.ok(item.id, 'every result has an id');
    const mine = first.find((item) => item.entityKey === created.entityKey);
    assert.ok(mine, 'the client created above is in the poll');
    const second = await appTester(trigger.operation.perform, { authData: authData(), inputData: {} });
    const again = second.find((item) => item.entityKey === created.entityKey);
    assert.equal(again.id, mine.id, 'ids are stable between polls (Zapier dedupes on them)');
  });
});
