// Custom secrets (docs/api.md). Values are encrypted and write-only.
import type { Models } from '../../models/index.js';
import { pageFromExtra, pageOffset } from '../../contract/common.schema.js';
import type { SecretBox } from '../crypto.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import { escapeRegex } from '../db/regex.js';

export interface CustomSecretInfo {
  name: string;
  description: string | null;
}

export class SecretsService {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
  ) {}

  async list(userId: string): Promise<CustomSecretInfo[]> {
    const docs = await this.models.CustomSecret.find({ userId }, { name: 1, description: 1 }).sort({ createdAt: 1, _id: 1 }).lean();
    return docs.map((d) => ({ name: d.name, description: d.description ?? null }));
  }

  /**
   * A page of the user's secrets by name (the V1 search), optionally only names containing a
   * text in any case. Served by the (user, name) index: the order is the index's, the text a
   * filter on it.
   */
  async search(
    userId: string,
    input: { name__contains?: string | null | undefined; page_id?: string | null | undefined; limit: number },
  ): Promise<{ items: CustomSecretInfo[]; next_page_id: string | null }> {
    const offset = pageOffset(input.page_id);
    const contains = input.name__contains ? { name: { $regex: escapeRegex(input.name__contains), $options: 'i' } } : {};
    const docs = await this.models.CustomSecret.find({ userId, ...contains }, { name: 1, description: 1 })
      .sort({ userId: 1, name: 1 })
      .skip(offset)
      .limit(input.limit + 1)
      .lean();
    const { page, next_page_id } = pageFromExtra(docs, offset, input.limit);
    return { items: page.map((d) => ({ name: d.name, description: d.description ?? null })), next_page_id };
  }

  async create(userId: string, input: { name: string; value: string; description?: string | null }): Promise<void> {
    try {
      await this.models.CustomSecret.create({
        userId,
        name: input.name,
        value: this.box.encrypt(input.value, secretValueContext(userId)),
        description: input.description ?? '',
      });
    } catch (error) {
      if (isDuplicateKeyError(error)) throw alreadyExists(input.name);
      throw error;
    }
  }

  /**
   * Renames and/or re-describes a secret; its value is unchanged. One conditional update: the
   * unique index on (user, name) turns a rename onto a name taken meanwhile into a duplicate key
   * error (the write gate gives FerretDB's the same form), so exactly one of two renames onto one
   * name wins and the other answers "already exists", with nothing written.
   */
  async update(userId: string, secretId: string, input: { name: string; description?: string | null }): Promise<void> {
    // Checked first for the common case; the update's own filter and the index decide races.
    if (input.name !== secretId && (await this.models.CustomSecret.exists({ userId, name: input.name }))) {
      throw alreadyExists(input.name);
    }
    try {
      const result = await this.models.CustomSecret.updateOne(
        { userId, name: secretId },
        { $set: { name: input.name, description: input.description ?? '' } },
      );
      if (result.matchedCount === 0) throw notFound(secretId);
    } catch (error) {
      if (isDuplicateKeyError(error)) throw alreadyExists(input.name);
      throw error;
    }
  }

  async delete(userId: string, secretId: string): Promise<void> {
    const result = await this.models.CustomSecret.deleteOne({ userId, name: secretId });
    if (result.deletedCount === 0) throw notFound(secretId);
  }

  /** One secret's value, decrypted (for the sandbox that asks by name); null when there is none. */
  async value(userId: string, name: string): Promise<string | null> {
    const doc = await this.models.CustomSecret.findOne({ userId, name }, { value: 1 }).lean();
    return doc ? this.box.decrypt(doc.value, secretValueContext(userId)) : null;
  }

  /** Decrypted {name: value} for the agent (never for responses). */
  async resolve(userId: string): Promise<{ name: string; value: string; description: string | null }[]> {
    const docs = await this.models.CustomSecret.find({ userId }).sort({ createdAt: 1, _id: 1 }).lean();
    return docs.map((d) => ({
      name: d.name,
      value: this.box.decrypt(d.value, secretValueContext(userId)),
      description: d.description ?? null,
    }));
  }
}

// The context is per user, not per name, so a rename keeps the ciphertext valid.
export const secretValueContext = (userId: string) => `secret:${userId}`;

const alreadyExists = (name: string) => new AppError('CONFLICT', `Secret ${name} already exists`, { reason: 'secret_exists' });

const notFound = (id: string) => new AppError('NOT_FOUND', `Secret with ID ${id} not found`, { reason: 'secret_not_found' });
