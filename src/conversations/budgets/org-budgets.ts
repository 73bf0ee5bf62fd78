// A team organisation's monthly budget (docs/organizations.md), in the shape of the Cloud's
// /api/organizations/{org_id}/budgets: the cap its owners and admins set (stored with the
// organisation) beside what its conversations have cost this month (budgets' ledger). Raising
// or removing the cap lets the conversations it stopped go on.
import type { OrgBudgetUpdate } from '../../../contract/organizations.schema.js';
import { AppError } from '../../errors.js';
import type { OrganizationsService } from '../../organizations/organizations.service.js';
import type { OrgMembership } from '../../organizations/index.js';
import type { BudgetsService } from './budgets.service.js';

export class OrgBudgetsService {
  constructor(
    private readonly organizations: Pick<OrganizationsService, 'monthlyBudget' | 'setMonthlyBudget'>,
    private readonly budgets: Pick<BudgetsService, 'organizationMonth' | 'reconsiderOrganization'>,
  ) {}

  async view(org: OrgMembership) {
    const limit = org.personal ? null : await this.organizations.monthlyBudget(org.orgId);
    const { month, cost } = org.personal ? { month: currentMonth(), cost: 0 } : await this.budgets.organizationMonth(org.orgId);
    const start = new Date(`${month}-01T00:00:00.000Z`);
    const end = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    return {
      enabled: limit !== null,
      monthly_limit: limit,
      current_spend: cost,
      current_spend_percentage: limit ? Math.round((cost / limit) * 10_000) / 100 : 0,
      reset_day: 1,
      cycle_start_at: start.toISOString(),
      cycle_end_at: end.toISOString(),
    };
  }

  async update(org: OrgMembership, input: OrgBudgetUpdate) {
    const enabled = input.enabled ?? (input.monthly_limit !== undefined ? input.monthly_limit !== null : undefined);
    if (enabled === undefined) return this.view(org);
    const limit = enabled ? (input.monthly_limit ?? (org.personal ? null : await this.organizations.monthlyBudget(org.orgId))) : null;
    if (enabled && limit === null) {
      throw new AppError('BAD_REQUEST', 'monthly_limit is required when budgets are enabled', { reason: 'org_budget_invalid' });
    }
    await this.organizations.setMonthlyBudget(org, limit);
    await this.budgets.reconsiderOrganization(org.orgId);
    return this.view(org);
  }
}

const currentMonth = () => new Date().toISOString().slice(0, 7);
