// A conversation's secrets as its start hands them out: in the agent server's start request
// (registered, masked in what the agent sees) and in a new sandbox's environment (its hooks read
// them). The request's over the user's own, theirs over the organisation's: the most specific wins.
import type { SecretsService } from '../../services/secrets.service.js';
import type { ConversationStore, StartTask } from '../records/store.js';

export interface ConversationSecretsDeps {
  store: Pick<ConversationStore, 'unseal'>;
  secrets: Pick<SecretsService, 'resolve'>;
  /** A team organisation's secrets, opened. */
  orgSecrets: (orgId: string) => Promise<{ name: string; value: string }[]>;
}

export async function conversationSecrets(task: StartTask, deps: ConversationSecretsDeps): Promise<{ name: string; value: string }[]> {
  const given = deps.store.unseal(task, 'requestSecrets') ?? {};
  const own = (await deps.secrets.resolve(task.userId)).filter((secret) => !(secret.name in given));
  const org = task.orgId ? await deps.orgSecrets(task.orgId) : [];
  const taken = new Set([...Object.keys(given), ...own.map((secret) => secret.name)]);
  const stored = [...org.filter((secret) => !taken.has(secret.name)), ...own];
  return [...stored, ...Object.entries(given).map(([name, value]) => ({ name, value }))];
}
