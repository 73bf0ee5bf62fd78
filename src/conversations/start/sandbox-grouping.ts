// Sandbox grouping (settings sandbox_grouping_strategy; docs/api.md "Sandbox grouping"): a new
// conversation goes into one of its owner's running sandboxes of the same spec instead of a new
// one, as the reference picks it. Only the owner's own sandboxes are candidates (one user per
// sandbox, always), only running ones, and only those below SANDBOX_MAX_CONVERSATIONS. Two starts
// at once may both pick the same sandbox: the bound can be passed by the starts in flight.
import type { SandboxGroupingStrategy } from '../../../contract/settings-v1.schema.js';
import type { SandboxesService } from '../../sandbox/index.js';
import type { SettingsService } from '../../services/settings/settings.service.js';
import type { ConversationStore } from '../records/store.js';

export interface GroupingCandidate {
  id: string;
  createdAt: string;
  conversations: number;
}

/** The reference's choice among running sandboxes (oldest first); null: a new sandbox. */
export function pickSandbox(strategy: SandboxGroupingStrategy, running: GroupingCandidate[], max: number): string | null {
  const open = running.filter((s) => s.conversations < max);
  if (strategy === 'NO_GROUPING' || open.length === 0) return null;
  const byAge = (a: GroupingCandidate, b: GroupingCandidate) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);
  const oldestFirst = [...open].sort(byAge);
  switch (strategy) {
    case 'GROUP_BY_NEWEST':
      return oldestFirst.at(-1)!.id;
    // The reference's name; it takes the oldest sandbox (least recently created).
    case 'LEAST_RECENTLY_USED':
      return oldestFirst[0]!.id;
    case 'FEWEST_CONVERSATIONS':
      return oldestFirst.reduce((best, s) => (s.conversations < best.conversations ? s : best)).id;
    case 'ADD_TO_ANY':
      return oldestFirst[0]!.id;
  }
}

export interface SandboxGroupingDeps {
  settings: Pick<SettingsService, 'groupingStrategy'>;
  sandboxes: Pick<SandboxesService, 'search' | 'specs'>;
  store: Pick<ConversationStore, 'countConversationsInSandbox'>;
  maxConversations: number;
}

export class SandboxGrouping {
  constructor(private readonly deps: SandboxGroupingDeps) {}

  /** The running sandbox a new conversation of the user joins, or null for a sandbox of its own. */
  async pick(userId: string, specId: string | null): Promise<string | null> {
    const strategy = await this.deps.settings.groupingStrategy(userId);
    if (strategy === 'NO_GROUPING') return null;
    const running = await this.running(userId, specId);
    const counted = await Promise.all(
      running.map(async (s) => ({ ...s, conversations: await this.deps.store.countConversationsInSandbox(userId, s.id) })),
    );
    return pickSandbox(strategy, counted, this.deps.maxConversations);
  }

  /** The user's running sandboxes of the spec (null: the default spec). */
  private async running(userId: string, specId: string | null): Promise<{ id: string; createdAt: string }[]> {
    const { sandboxes } = this.deps;
    const spec = specId ? sandboxes.specs.find(specId) : sandboxes.specs.default;
    if (!spec) return [];
    const { items } = await sandboxes.search(userId, null, 100);
    return items.filter((s) => s.status === 'RUNNING' && s.sandbox_spec_id === spec.id).map((s) => ({ id: s.id, createdAt: s.created_at }));
  }
}
