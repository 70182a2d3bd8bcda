'use strict';
// Hand-written proof support (not generated): runs the built package (dist/) inside n8n's own
// execution engine from n8n-core (WorkflowExecute, PollContext, HookContext), the way an n8n
// instance does, without an n8n server. Set N8N_USER_FOLDER before requiring this file.

const path = require('node:path');

const core = require('n8n-core');
const { Workflow, ICredentialsHelper, createRunExecutionData } = require('n8n-workflow');

const DIST = path.join(__dirname, '..', 'dist');
const PACKAGE = 'n8n-nodes-practiceflow';
const pkg = require(path.join(__dirname, '..', 'package.json'));

// Load every node and credential class the package.json `n8n` section lists, as n8n does.
const loadClasses = (files) => {
  const out = {};
  for (const file of files) {
    const exported = require(path.join(__dirname, '..', file));
    for (const Class of Object.values(exported)) out[Class.name] = Class;
  }
  return out;
};
const nodeClasses = loadClasses(pkg.n8n.nodes);
const credentialClasses = loadClasses(pkg.n8n.credentials);

const nodeTypes = {
  byName: Object.fromEntries(
    Object.values(nodeClasses).map((Class) => {
      const instance = new Class();
      return [`${PACKAGE}.${instance.description.name}`, instance];
    }),
  ),
  getByName(type) {
    return this.byName[type];
  },
  getByNameAndVersion(type) {
    const found = this.byName[type];
    if (!found) throw new Error(`unknown node type ${type}`);
    return found;
  },
  getKnownTypes() {
    return {};
  },
};

const credentialTypes = Object.fromEntries(
  Object.values(credentialClasses).map((Class) => {
    const instance = new Class();
    return [instance.name, instance];
  }),
);

// The credential store of this harness: one set of decrypted values per credential id, and
// the credential type's own declarative `authenticate` applied with n8n's expression engine.
class CredentialsHelper extends ICredentialsHelper {
  constructor(values) {
    super();
    this.values = values;
  }
  getParentTypes() {
    return [];
  }
  isCredentialUsableByNode() {
    return true;
  }
  async authenticate(credentials, typeName, requestOptions, workflow, node) {
    const type = credentialTypes[typeName];
    const auth = type && type.authenticate;
    if (!auth || auth.type !== 'generic') throw new Error(`no generic authenticate on ${typeName}`);
    for (const [where, entries] of Object.entries(auth.properties)) {
      requestOptions[where] = requestOptions[where] || {};
      for (const [key, value] of Object.entries(entries)) {
        requestOptions[where][key] = workflow.expression.getSimpleParameterValue(
          node, value, 'internal', { $credentials: credentials }, undefined, value,
        );
      }
    }
    return requestOptions;
  }
  async preAuthentication() {
    return undefined;
  }
  async runPreAuthentication() {
    return undefined;
  }
  async getCredentials() {
    throw new Error('not used');
  }
  async getDecrypted(_additionalData, nodeCredentials, type) {
    const found = this.values[nodeCredentials.id];
    if (!found || found.type !== type) throw new Error(`no credential ${nodeCredentials.id} of type ${type}`);
    return { ...found.data };
  }
  async updateCredentials() {}
  async updateCredentialsOauthTokenData() {}
  getCredentialsProperties(type) {
    return credentialTypes[type].properties;
  }
}

const additionalData = (credentials, webhookBaseUrl) => ({
  credentialsHelper: new CredentialsHelper(credentials),
  executeWorkflow: async () => {
    throw new Error('sub-workflows are not used');
  },
  getRunExecutionData: async () => undefined,
  getRuntimeCredential: async () => undefined,
  currentNodeExecutionIndex: 0,
  restApiUrl: 'http://127.0.0.1/rest',
  instanceBaseUrl: 'http://127.0.0.1/',
  formBaseUrl: 'http://127.0.0.1/form',
  formWaitingBaseUrl: 'http://127.0.0.1/form-waiting',
  formTestBaseUrl: 'http://127.0.0.1/form-test',
  webhookBaseUrl: webhookBaseUrl || 'http://127.0.0.1/webhook',
  webhookWaitingBaseUrl: 'http://127.0.0.1/webhook-waiting',
  webhookTestBaseUrl: 'http://127.0.0.1/webhook-test',
  mcpBaseUrl: 'http://127.0.0.1/mcp',
  mcpTestBaseUrl: 'http://127.0.0.1/mcp-test',
  variables: {},
  userId: 'harness',
  logAiEvent: () => {},
  startRunnerTask: async () => {
    throw new Error('code tasks are not used');
  },
  hooks: new core.ExecutionLifecycleHooks('manual', 'harness-execution', {}),
});

const makeNode = (typeName, name, parameters, extra = {}) => ({
  id: `${name}-id`,
  name,
  type: `${PACKAGE}.${typeName}`,
  typeVersion: 1,
  position: [0, 0],
  parameters,
  credentials: { practiceflowApi: { id: 'sandbox', name: 'Sandbox' } },
  ...extra,
});

const makeWorkflow = (node, staticData) =>
  new Workflow({
    id: 'proof-workflow',
    name: 'practiceflow proof',
    nodes: [node],
    connections: {},
    active: false,
    nodeTypes,
    staticData: staticData || {},
    settings: {},
  });

const itemsOf = (run, nodeName) => {
  if (run.data.resultData.error) throw run.data.resultData.error;
  const runs = run.data.resultData.runData[nodeName] || [];
  const last = runs[runs.length - 1];
  return last && last.data ? last.data.main[0] || [] : [];
};

/** Run one node as the start of a manual execution with n8n-core's WorkflowExecute. */
const executeNode = async (node, data) => {
  const workflow = makeWorkflow(node);
  const run = await new core.WorkflowExecute(data, 'manual').run({ workflow, startNode: node });
  return itemsOf(run, node.name);
};

/**
 * One poll as an active workflow does it: n8n-core's poll runner calls the node's poll()
 * with a PollContext (mode trigger), static data loaded from and saved to `store` (what the
 * n8n database does between polls); what it emits starts a WorkflowExecute run.
 */
const pollOnce = async (node, data, store) => {
  const workflow = makeWorkflow(node, JSON.parse(store.staticData || '{}'));
  const context = new core.PollContext(workflow, node, data, 'trigger', 'trigger');
  const emitted = await new core.TriggersAndPollers().runPollFunction(workflow, node, context);
  store.staticData = JSON.stringify(workflow.staticData);
  if (!emitted) return { items: [], staticData: JSON.parse(store.staticData) };
  const runData = createRunExecutionData({
    executionData: { nodeExecutionStack: [{ node, data: { main: emitted }, source: null }] },
  });
  const run = await new core.WorkflowExecute(data, 'trigger', runData).processRunExecutionData(workflow);
  return { items: itemsOf(run, node.name), staticData: JSON.parse(store.staticData) };
};

/** Call one webhook lifecycle method (checkExists, create, delete) as n8n activation does. */
const webhookMethod = async (workflow, node, data, method) => {
  const nodeType = nodeTypes.getByNameAndVersion(node.type);
  const context = new core.HookContext(workflow, node, data, 'trigger', 'activate');
  return await nodeType.webhookMethods.default[method].call(context);
};

/** Hand one delivery to the node's webhook() the way n8n's webhook server does. */
const deliver = async (workflow, node, data, request, response) => {
  const nodeType = nodeTypes.getByNameAndVersion(node.type);
  const webhookData = {
    httpMethod: 'POST',
    node: node.name,
    path: 'webhook',
    webhookDescription: nodeType.description.webhooks[0],
    workflowId: workflow.id,
    workflowExecuteAdditionalData: data,
  };
  const context = new core.WebhookContext(workflow, node, { ...data, httpRequest: request, httpResponse: response }, 'webhook', webhookData, [], null);
  return await nodeType.webhook.call(context);
};

module.exports = {
  additionalData,
  credentialTypes,
  deliver,
  executeNode,
  makeNode,
  makeWorkflow,
  nodeTypes,
  pollOnce,
  webhookMethod,
};
