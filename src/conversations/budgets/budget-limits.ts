// The limits that apply to a conversation (docs/budgets.md): its own budget, else its owner's
// max_budget_per_task; its owner's monthly cap (max_budget_per_month, else MAX_BUDGET_PER_MONTH);
// and, started in a team organisation, that organisation's monthly cap (docs/organizations.md).
// For the LLM gateway's calls (`cached`) the owner's and the organisation's limits are kept as
// read for CACHED_MS; a limit set on this replica ends that at once (changed()), one set on
// another replica within CACHED_MS.
import { KeptReads } from '../../db/kept-reads.js';
import type { SettingsService } from '../../services/settings/settings.service.js';
import type { SpendRecord } from './spend-records.js';
import type { Limits } from './spend.js';

/** The limits of a user: the settings' default budget per conversation and the monthly cap in force. */
export interface UserLimits {
  perTaskDefault: number | null;
  perMonth: number | null;
  perMonthSource: 'settings' | 'operator' | null;
}

export const CACHED_MS = 1_000;

export interface BudgetLimitsOptions {
  settings: SettingsService;
  /** MAX_BUDGET_PER_MONTH: the monthly cap of users who set none (null: none). */
  defaultMonthlyCap: number | null;
  /** A team organisation's monthly cap (null: none). */
  orgMonthlyCap?: ((orgId: string) => Promise<number | null>) | undefined;
  now: () => number;
}

export class BudgetLimits {
  /** Counts the limits set since start: a read made across a change is not kept. */
  generation = 0;
  private readonly users: KeptReads<UserLimits>;
  private readonly orgs: KeptReads<number | null>;

  constructor(private readonly options: BudgetLimitsOptions) {
    this.users = new KeptReads(CACHED_MS, options.now);
    this.orgs = new KeptReads(CACHED_MS, options.now);
  }

  async user(userId: string): Promise<UserLimits> {
    const own = await this.options.settings.budgets(userId);
    const perMonth = own.max_budget_per_month ?? this.options.defaultMonthlyCap;
    return {
      perTaskDefault: own.max_budget_per_task,
      perMonth,
      perMonthSource: own.max_budget_per_month !== null ? 'settings' : perMonth !== null ? 'operator' : null,
    };
  }

  async of(record: SpendRecord, cached = false): Promise<Limits> {
    const user = cached ? await this.users.get(record.userId, () => this.user(record.userId)) : await this.user(record.userId);
    const orgCap = this.options.orgMonthlyCap;
    const perOrgMonth =
      record.orgId && orgCap
        ? cached
          ? await this.orgs.get(record.orgId, () => orgCap(record.orgId!))
          : await orgCap(record.orgId)
        : null;
    return { perTask: record.max_budget_per_task ?? user.perTaskDefault, perMonth: user.perMonth, perOrgMonth };
  }

  /** A limit may have been set: every limit is read again (and a read under way is not kept). */
  changed(): void {
    this.generation++;
    this.users.forget();
    this.orgs.forget();
  }
}
