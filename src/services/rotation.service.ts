// Re-encrypts stored secrets under the current ENCRYPTION_KEY. Run after adding a new key with
// the old one in ENCRYPTION_KEY_PREVIOUS; afterwards the old key can be dropped. Each owner of
// encrypted fields re-wraps its own (this file: the services' records and the webhook
// endpoints' secrets, organisations' LLM keys; the conversations store: start tasks); `cli encryption rotate` runs them all.
import { automationKeyContext, endpointSecretContext, type Models, type SettingsRecord } from '../../models/index.js';
import type { SecretBox } from '../crypto.js';
import { newVersion, untilApplied } from '../db/versions.js';
import { tokenContext } from '../git/git-providers.service.js';
import { llmProfileSecretContext } from './settings/profiles-store.js';
import { envContext, keyContext, secretKeyContext } from '../sandbox/index.js';
import { orgLlmKeyContext, orgSecretContext } from '../organizations/index.js';
import { secretValueContext } from './secrets.service.js';
import { mapSettingsSecrets, SECRET_SETTINGS_FIELDS } from './settings/settings-secrets.js';

/** Re-encrypts one ciphertext under the current key (values already current are returned as they are). */
export type Rewrap = <T>(value: T, context: string) => T | string;

export function rewrapper(box: SecretBox): { rewrap: Rewrap; values: () => number } {
  let values = 0;
  const rewrap: Rewrap = (value, context) => {
    if (typeof value !== 'string' || box.isCurrent(value)) return value;
    values++;
    return box.encrypt(box.decrypt(value, context), context);
  };
  return { rewrap, values: () => values };
}

/**
 * Settings secrets, LLM profile keys and git provider tokens (one document per user), custom secrets and sandbox
 * session keys; returns the documents visited. The service may be running: each document's
 * write applies only over the values it re-encrypted (or the MCP and provider-map versions),
 * else that document is read again, so a secret saved meanwhile is never overwritten.
 */
export async function reencryptServiceSecrets(models: Models, rewrap: Rewrap): Promise<number> {
  let documents = 0;
  for await (const { _id } of models.Settings.find({}, { _id: 1 }).lean().cursor()) {
    await untilApplied('A settings document', async () => {
      const doc = await models.Settings.findOne({ _id }).lean();
      const change = doc ? settingsChange(doc, rewrap) : null;
      return !change || (await models.Settings.updateOne({ _id, ...change.expected }, { $set: change.set })).matchedCount > 0;
    });
    documents++;
  }

  for await (const { _id } of models.CustomSecret.find({}, { _id: 1 }).lean().cursor()) {
    await untilApplied('A custom secret', async () => {
      const doc = await models.CustomSecret.findOne({ _id }).lean();
      const value = doc && rewrap(doc.value, secretValueContext(doc.userId));
      if (!doc || value === doc.value) return true;
      return (await models.CustomSecret.updateOne({ _id, value: doc.value }, { $set: { value } })).matchedCount > 0;
    });
    documents++;
  }

  // Webhook endpoints: the signing secret and, within its grace, the rotated-out one.
  for await (const { _id } of models.WebhookEndpoint.find({}, { _id: 1 }).lean().cursor()) {
    await untilApplied('A webhook endpoint', async () => {
      const doc = await models.WebhookEndpoint.findOne({ _id }).lean();
      if (!doc) return true;
      const secret = rewrap(doc.secret, endpointSecretContext(_id));
      const previousSecret = rewrap(doc.previousSecret ?? null, endpointSecretContext(_id));
      if (secret === doc.secret && previousSecret === (doc.previousSecret ?? null)) return true;
      const expected = { secret: doc.secret, previousSecret: doc.previousSecret ?? null };
      return (await models.WebhookEndpoint.updateOne({ _id, ...expected }, { $set: { secret, previousSecret } })).matchedCount > 0;
    });
    documents++;
  }

  // Organisations' LLM keys.
  for await (const { _id } of models.Organization.find({}, { _id: 1 }).lean().cursor()) {
    await untilApplied('An organization', async () => {
      const doc = await models.Organization.findOne({ _id }).lean();
      const apiKey = doc?.llm?.apiKey ?? null;
      const rewrapped = rewrap(apiKey, orgLlmKeyContext(_id));
      if (!doc || rewrapped === apiKey) return true;
      return (await models.Organization.updateOne({ _id, 'llm.apiKey': apiKey }, { $set: { 'llm.apiKey': rewrapped } })).matchedCount > 0;
    });
    documents++;
  }

  for await (const { _id } of models.OrgSecret.find({}, { _id: 1 }).lean().cursor()) {
    await untilApplied("An organization's secret", async () => {
      const doc = await models.OrgSecret.findOne({ _id }).lean();
      const value = doc && rewrap(doc.value, orgSecretContext(doc.orgId));
      if (!doc || value === doc.value) return true;
      return (await models.OrgSecret.updateOne({ _id, value: doc.value }, { $set: { value } })).matchedCount > 0;
    });
    documents++;
  }

  // Automation keys, kept sealed to be handed to the automation service again (src/automations/).
  for await (const { _id } of models.ApiKey.find({ sealedKey: { $ne: null } }, { _id: 1 })
    .lean()
    .cursor()) {
    await untilApplied('An automation key', async () => {
      const doc = await models.ApiKey.findOne({ _id }, { sealedKey: 1 }).lean();
      const sealedKey = doc?.sealedKey ?? null;
      const rewrapped = rewrap(sealedKey, automationKeyContext(_id));
      if (!doc || rewrapped === sealedKey) return true;
      return (await models.ApiKey.updateOne({ _id, sealedKey }, { $set: { sealedKey: rewrapped } })).matchedCount > 0;
    });
    documents++;
  }

  // Live sandboxes keep their keys and environment; only their ciphertext changes.
  for await (const { _id } of models.Sandbox.find({}, { _id: 1 }).lean().cursor()) {
    await untilApplied('A sandbox record', async () => {
      const doc = await models.Sandbox.findOne({ _id }).lean();
      if (!doc) return true;
      const sealed = { sessionApiKey: keyContext(_id), secretKey: secretKeyContext(_id), sealedEnv: envContext(_id) } as const;
      const expected: Record<string, unknown> = {};
      const set: Record<string, unknown> = {};
      for (const [field, context] of Object.entries(sealed) as [keyof typeof sealed, string][]) {
        const value = doc[field];
        if (!value) continue;
        const rewrapped = rewrap(value, context);
        if (rewrapped !== value) [expected[field], set[field]] = [value, rewrapped];
      }
      if (Object.keys(set).length === 0) return true;
      return (await models.Sandbox.updateOne({ _id, ...expected }, { $set: set })).matchedCount > 0;
    });
    documents++;
  }
  return documents;
}

/** The re-encrypted fields of a settings document and the values they must still have; null when all are current. */
function settingsChange(doc: SettingsRecord, rewrap: Rewrap): { expected: Record<string, unknown>; set: Record<string, unknown> } | null {
  const rewrapped = mapSettingsSecrets(doc.userId, doc, (value, at) => rewrap(value, at.context));
  const expected: Record<string, unknown> = {};
  const set: Record<string, unknown> = {};
  for (const field of SECRET_SETTINGS_FIELDS) {
    if (doc[field] && rewrapped.fields[field] !== doc[field]) {
      expected[field] = doc[field];
      set[field] = rewrapped.fields[field];
    }
  }
  if (doc.mcp_config && JSON.stringify(rewrapped.mcp_config) !== JSON.stringify(mapSettingsSecrets(doc.userId, doc, (v) => v).mcp_config)) {
    expected.mcpVersion = doc.mcpVersion ?? null;
    Object.assign(set, { mcp_config: rewrapped.mcp_config, mcpVersion: newVersion() });
  }
  if (doc.providerTokens) {
    const tokens = structuredClone(doc.providerTokens) as Record<string, { token: string } | null | undefined>;
    let changed = false;
    for (const [provider, entry] of Object.entries(tokens)) {
      const token = entry?.token && rewrap(entry.token, tokenContext(doc.userId, provider));
      if (entry && token && token !== entry.token) [entry.token, changed] = [token, true];
    }
    if (changed) {
      expected.providerTokensVersion = doc.providerTokensVersion ?? null;
      Object.assign(set, { providerTokens: tokens, providerTokensVersion: newVersion() });
    }
  }
  if (doc.llmProfiles?.length) {
    const profiles = doc.llmProfiles.map((p) => ({ ...p, apiKey: rewrap(p.apiKey ?? null, llmProfileSecretContext(doc.userId)) }));
    if (profiles.some((p, i) => p.apiKey !== (doc.llmProfiles![i]!.apiKey ?? null))) {
      expected.profilesVersion = doc.profilesVersion ?? null;
      Object.assign(set, { llmProfiles: profiles, profilesVersion: newVersion() });
    }
  }
  return Object.keys(set).length ? { expected, set } : null;
}
