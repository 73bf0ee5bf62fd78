// Re-encrypts stored secrets under the current ENCRYPTION_KEY. Run after adding a new key with
// the old one in ENCRYPTION_KEY_PREVIOUS; afterwards the old key can be dropped. Each owner of
// encrypted fields re-wraps its own (this file: the services' records; the conversations
// store: start tasks); `cli encryption rotate` runs them all.
import type { Models } from '../../models/index.js';
import type { SecretBox } from '../crypto.js';
import { tokenContext } from './git-providers.service.js';
import { keyContext } from './sandboxes.service.js';
import { secretValueContext } from './secrets.service.js';
import { mapSettingsSecrets, SECRET_SETTINGS_FIELDS } from './settings-secrets.js';

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

/** Settings secrets, git provider tokens, custom secrets and sandbox session keys; returns the documents visited. */
export async function reencryptServiceSecrets(models: Models, rewrap: Rewrap): Promise<number> {
  let documents = 0;
  for await (const doc of models.Settings.find({}).lean().cursor()) {
    const rewrapped = mapSettingsSecrets(doc.userId, doc, (value, at) => rewrap(value, at.context));
    const set: Record<string, unknown> = {};
    for (const field of SECRET_SETTINGS_FIELDS) if (doc[field]) set[field] = rewrapped.fields[field];
    if (doc.mcp_config) set.mcp_config = rewrapped.mcp_config;
    await models.Settings.updateOne({ _id: doc._id }, { $set: set });
    documents++;
  }

  for await (const doc of models.GitProviderTokens.find({}).lean().cursor()) {
    const tokens = (doc.tokens ?? {}) as Record<string, { token: string } | null | undefined>;
    for (const [provider, entry] of Object.entries(tokens)) {
      if (entry?.token) entry.token = rewrap(entry.token, tokenContext(doc.userId, provider));
    }
    await models.GitProviderTokens.updateOne({ _id: doc._id }, { $set: { tokens } });
    documents++;
  }

  for await (const doc of models.CustomSecret.find({}).lean().cursor()) {
    await models.CustomSecret.updateOne({ _id: doc._id }, { $set: { value: rewrap(doc.value, secretValueContext(doc.userId)) } });
    documents++;
  }

  // Live sandboxes keep their session key; only its ciphertext changes.
  for await (const doc of models.Sandbox.find({}).lean().cursor()) {
    await models.Sandbox.updateOne({ _id: doc._id }, { $set: { sessionApiKey: rewrap(doc.sessionApiKey, keyContext(doc._id)) } });
    documents++;
  }
  return documents;
}
