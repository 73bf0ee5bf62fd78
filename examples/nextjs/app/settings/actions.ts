'use server';
import type { SaveSettingsInput } from '@agent-control-plane/client';
import { revalidatePath } from 'next/cache';
import { failed, idle, succeeded, type ActionResult } from '@/lib/action-result';
import { service } from '@/lib/service';

const text = (form: FormData, name: string) => String(form.get(name) ?? '').trim();
const optional = (value: string) => (value === '' ? null : value);

export async function saveSettings(_previous: ActionResult, form: FormData): Promise<ActionResult> {
  let mcpConfig: unknown = null;
  try {
    mcpConfig = text(form, 'mcp_config') ? JSON.parse(text(form, 'mcp_config')) : null;
  } catch (error) {
    return { ...idle, message: 'Settings not saved.', fieldErrors: { mcp_config: `Not valid JSON: ${(error as Error).message}` } };
  }
  const update: SaveSettingsInput = {
    llm_model: optional(text(form, 'llm_model')),
    llm_base_url: optional(text(form, 'llm_base_url')),
    confirmation_mode: form.get('confirmation_mode') === 'on',
    git_user_name: optional(text(form, 'git_user_name')),
    git_user_email: optional(text(form, 'git_user_email')),
    // The service checks the structure and keeps masked credentials ("**********") as stored.
    mcp_config: mcpConfig as SaveSettingsInput['mcp_config'],
  };
  // Write-only: an empty field keeps the stored key, "clear" removes it.
  const llmApiKey = text(form, 'llm_api_key');
  if (form.get('clear_llm_api_key') === 'on') update.llm_api_key = '';
  else if (llmApiKey) update.llm_api_key = llmApiKey;
  try {
    await (await service()).settings.save.mutate(update);
  } catch (error) {
    return failed(error);
  }
  revalidatePath('/settings');
  return succeeded('Settings saved.');
}
