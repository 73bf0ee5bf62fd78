// Which models a user may run (docs/llm-gateway.md, Models allowed): the service's list
// (LLM_ALLOWED_MODELS) and the one the service's administrators set for that user
// (models/user-llm-policy.model.ts), both globs over the model as named. Checked when a
// conversation is given its LLM (a start, a profile switch: agent-llm.ts), whichever way its key
// goes, and on every gateway call, where a user's list is kept for KEPT_MS (a change made on this
// replica ends that at once).
import type { UserLlmPolicyModel } from '../../models/index.js';
import type { LlmPolicy } from '../../contract/llm-policies.schema.js';
import { KeptReads } from '../db/kept-reads.js';
import { AppError } from '../errors.js';

const KEPT_MS = 1_000;

export interface ModelPolicyDeps {
  /** LLM_ALLOWED_MODELS (empty: every model). */
  serviceGlobs: string[];
  Policy: UserLlmPolicyModel;
  isAdmin(userId: string): Promise<boolean>;
  now?: () => number;
}

export class ModelPolicy {
  private readonly service: RegExp[];
  private readonly users: KeptReads<RegExp[] | null>;

  constructor(private readonly deps: ModelPolicyDeps) {
    this.service = deps.serviceGlobs.map(globPattern);
    this.users = new KeptReads(KEPT_MS, deps.now ?? Date.now);
  }

  /** Why `userId` may not run `model` (words the user or their agent is shown), or null. */
  async refusal(userId: string, model: string, kept = false): Promise<string | null> {
    if (this.service.length > 0 && !this.service.some((p) => p.test(model)))
      return `${model} is not among the models this service allows (LLM_ALLOWED_MODELS)`;
    const own = kept ? await this.users.get(userId, () => this.patternsOf(userId)) : await this.patternsOf(userId);
    if (own && !own.some((p) => p.test(model))) return `${model} is not among the models an administrator allows you`;
    return null;
  }

  /** Throws 403 model_not_allowed when `userId` may not run `model`. */
  async assertAllowed(userId: string, model: string): Promise<void> {
    const refused = await this.refusal(userId, model);
    if (refused) throw new AppError('FORBIDDEN', refused, { reason: 'model_not_allowed' });
  }

  async view(adminId: string, userId: string): Promise<LlmPolicy> {
    await this.assertAdmin(adminId);
    const record = await this.deps.Policy.findById(userId).lean();
    return {
      user_id: userId,
      allowed_models: record ? record.allowedModels : null,
      service_allowed_models: this.deps.serviceGlobs,
      updated_by: record?.updatedBy ?? null,
      updated_at: record?.updatedAt.toISOString() ?? null,
    };
  }

  /** Sets (null: removes) the user's list; their next start and gateway call follow it. */
  async set(adminId: string, userId: string, allowedModels: string[] | null): Promise<LlmPolicy> {
    await this.assertAdmin(adminId);
    if (allowedModels === null) await this.deps.Policy.deleteOne({ _id: userId });
    else {
      const update = { allowedModels: [...new Set(allowedModels)], updatedBy: adminId, updatedAt: new Date() };
      await this.deps.Policy.updateOne({ _id: userId }, { $set: update }, { upsert: true });
    }
    this.users.forget();
    return this.view(adminId, userId);
  }

  private async patternsOf(userId: string): Promise<RegExp[] | null> {
    const record = await this.deps.Policy.findById(userId, { allowedModels: 1 }).lean();
    return record ? record.allowedModels.map(globPattern) : null;
  }

  private async assertAdmin(userId: string): Promise<void> {
    if (!(await this.deps.isAdmin(userId)))
      throw new AppError('FORBIDDEN', "Only administrators read or set a user's models", { reason: 'not_an_admin' });
  }
}

/** `*` matches anything (the provider's slash included); everything else matches itself. */
const globPattern = (glob: string) => new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
