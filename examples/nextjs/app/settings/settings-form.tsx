'use client';
import type { Settings } from '@agent-control-plane/client';
import { useActionState, useEffect, useRef, startTransition } from 'react';
import { FieldErrors, Outcome } from '@/components/form-feedback';
import { idle } from '@/lib/action-result';
import { saveSettings } from './actions';

const EMPTY_MCP = { sse_servers: [], stdio_servers: [], shttp_servers: [] };

export function SettingsForm({ settings }: { settings: Settings | null }) {
  const [result, save, pending] = useActionState(saveSettings, idle);
  const form = useRef<HTMLFormElement>(null);
  // A failed save keeps what was typed; a successful one shows the stored values (and empties the key field).
  useEffect(() => {
    if (result.ok) form.current?.reset();
  }, [result]);
  const errors = result.fieldErrors;
  return (
    <form
      ref={form}
      onSubmit={(event) => {
        event.preventDefault();
        const data = new FormData(event.currentTarget);
        startTransition(() => save(data));
      }}
    >
      <h2>Model</h2>
      <label htmlFor="llm_model">LLM model</label>
      <input id="llm_model" name="llm_model" defaultValue={settings?.llm_model ?? ''} placeholder="anthropic/claude-sonnet-4-5" />
      <FieldErrors errors={errors} field="llm_model" />
      <label htmlFor="llm_base_url">Base URL (optional)</label>
      <input id="llm_base_url" name="llm_base_url" defaultValue={settings?.llm_base_url ?? ''} />
      <FieldErrors errors={errors} field="llm_base_url" />
      <label htmlFor="llm_api_key">LLM API key</label>
      <input
        id="llm_api_key"
        name="llm_api_key"
        type="password"
        autoComplete="off"
        placeholder={settings?.llm_api_key_set ? 'Leave empty to keep the stored key' : ''}
      />
      <p className="hint" id="llm_api_key_state">
        {settings?.llm_api_key_set ? 'A key is stored. It is never shown again.' : 'No key stored.'}
      </p>
      {settings?.llm_api_key_set && (
        <label>
          <input type="checkbox" name="clear_llm_api_key" style={{ width: 'auto' }} /> Remove the stored key
        </label>
      )}
      <FieldErrors errors={errors} field="llm_api_key" />
      <label>
        <input type="checkbox" name="confirmation_mode" defaultChecked={settings?.confirmation_mode ?? false} style={{ width: 'auto' }} />{' '}
        Ask before the agent acts (confirmation mode)
      </label>

      <h2>MCP servers</h2>
      <label htmlFor="mcp_config">Servers (JSON; stored credentials show as **********, sent back unchanged they are kept)</label>
      <textarea id="mcp_config" name="mcp_config" defaultValue={JSON.stringify(settings?.mcp_config ?? EMPTY_MCP, null, 2)} />
      <FieldErrors errors={errors} field="mcp_config" />

      <h2>Git identity</h2>
      <label htmlFor="git_user_name">Name</label>
      <input id="git_user_name" name="git_user_name" defaultValue={settings?.git_user_name ?? ''} />
      <FieldErrors errors={errors} field="git_user_name" />
      <label htmlFor="git_user_email">Email</label>
      <input id="git_user_email" name="git_user_email" type="email" defaultValue={settings?.git_user_email ?? ''} />
      <FieldErrors errors={errors} field="git_user_email" />

      <Outcome result={result} />
      <button type="submit" disabled={pending}>
        Save settings
      </button>
    </form>
  );
}
