'use server';
import type { AddGitProvidersInput, ProviderType } from '@agent-control-plane/client';
import { revalidatePath } from 'next/cache';
import { failed, idle, succeeded, type ActionResult } from '@/lib/action-result';
import { service } from '@/lib/service';

const PROVIDERS: readonly ProviderType[] = ['github', 'gitlab', 'bitbucket', 'enterprise_sso'];

export async function addProvider(_previous: ActionResult, form: FormData): Promise<ActionResult> {
  const provider = String(form.get('provider'));
  if (!PROVIDERS.includes(provider as ProviderType)) return { ...idle, fieldErrors: { provider: 'Choose a provider.' } };
  const token = String(form.get('token') ?? '').trim();
  const host = String(form.get('host') ?? '').trim() || null;
  try {
    // The stored map is replaced by the one sent: keep the other providers (no token: keep theirs).
    const trpc = await service();
    const current = await trpc.settings.get.query({}).then(
      (settings) => settings.provider_tokens_set,
      () => ({}),
    );
    const providerTokens: NonNullable<AddGitProvidersInput['provider_tokens']> = {};
    for (const [name, knownHost] of Object.entries(current)) providerTokens[name as ProviderType] = { host: knownHost };
    providerTokens[provider as ProviderType] = { token, host };
    await trpc.gitProviders.add.mutate({ provider_tokens: providerTokens });
  } catch (error) {
    return failed(error);
  }
  revalidatePath('/git-providers');
  return succeeded(`${provider} connected.`);
}

export async function removeProviders(): Promise<ActionResult> {
  try {
    await (await service()).gitProviders.unset.mutate({});
  } catch (error) {
    return failed(error);
  }
  revalidatePath('/git-providers');
  return succeeded('All git providers removed.');
}
