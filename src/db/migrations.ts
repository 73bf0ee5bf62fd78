// Data moves run at start-up (service and CLI), idempotent and safe to run on several
// replicas at once. Each finishes by emptying what it moved, so later starts do nothing.
import type { Connection } from 'mongoose';
import type { Models } from '../../models/index.js';

/**
 * Git provider tokens used to live in a collection of their own (one document per user); they
 * are now part of the user's settings document, so settings and tokens are read in one query.
 */
async function moveProviderTokensIntoSettings(connection: Connection, models: Models): Promise<void> {
  const legacy = connection.collection<{ userId: string; tokens?: unknown; updatedAt?: Date }>('git_provider_tokens');
  for await (const doc of legacy.find({})) {
    const current = await models.Settings.findOne({ userId: doc.userId }, { providerTokens: 1 }).lean();
    if (!current?.providerTokens) {
      await models.Settings.collection.updateOne(
        { userId: doc.userId },
        { $set: { providerTokens: doc.tokens ?? {}, providerTokensUpdatedAt: doc.updatedAt ?? new Date() } },
        { upsert: true },
      );
    }
    await legacy.deleteOne({ _id: doc._id });
  }
}

export async function migrate(connection: Connection, models: Models): Promise<void> {
  await moveProviderTokensIntoSettings(connection, models);
}
