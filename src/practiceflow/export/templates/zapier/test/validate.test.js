'use strict';
// The app's own test, shipped with every export (practiceflow/export/templates/zapier/test):
// the app passes the validation Zapier's CLI runs
// locally, and each trigger / search / create passes its own schema (where a missing
// sample is caught). Uses zapier-platform-core and zapier-platform-schema only.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const { prepareApp, validateApp } = require('zapier-platform-core/src/tools/schema');
const { recurseCleanFuncs } = require('zapier-platform-core/src/tools/cleaner');
const TriggerSchema = require('zapier-platform-schema/lib/schemas/TriggerSchema');
const SearchSchema = require('zapier-platform-schema/lib/schemas/SearchSchema');
const CreateSchema = require('zapier-platform-schema/lib/schemas/CreateSchema');

const appDir = process.env.PF_APP_DIR || path.join(__dirname, '..');
const App = require(appDir);

test('the app passes validateApp(prepareApp(app))', () => {
  const errors = validateApp(prepareApp(App));
  assert.deepEqual(errors, [], JSON.stringify(errors, null, 2));
});

const kinds = [
  ['triggers', TriggerSchema],
  ['searches', SearchSchema],
  ['creates', CreateSchema],
];

for (const [kind, schema] of kinds) {
  test(`each of ${kind} passes its own schema and has a sample`, () => {
    const items = Object.values(recurseCleanFuncs(prepareApp(App))[kind] || {});
    assert.ok(items.length > 0, `the app has no ${kind}`);
    for (const item of items) {
      const result = schema.validate(item);
      assert.deepEqual(result.errors, [], `${kind}.${item.key}: ${JSON.stringify(result.errors)}`);
      assert.ok(item.operation.sample, `${kind}.${item.key} has no sample`);
    }
  });
}

test('every trigger sample carries an id (what Zapier deduplicates on)', () => {
  for (const trigger of Object.values(App.triggers)) {
    assert.ok(trigger.operation.sample.id, `${trigger.key} sample has no id`);
  }
});

test('REST hooks have subscribe, unsubscribe and perform; polling triggers perform', () => {
  for (const trigger of Object.values(App.triggers)) {
    const op = trigger.operation;
    assert.equal(typeof op.perform, 'function', trigger.key);
    if (op.type === 'hook') {
      assert.equal(typeof op.performSubscribe, 'function', trigger.key);
      assert.equal(typeof op.performUnsubscribe, 'function', trigger.key);
    } else {
      assert.equal(op.type, 'polling', trigger.key);
    }
  }
});
