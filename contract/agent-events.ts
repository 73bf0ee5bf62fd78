// The agent SDK's event kinds as the agent server (1.58) sends them and events.watch delivers
// them (types only: the events are the agent server's JSON, passed on as stored). Fields are
// those a UI reads; each event carries more (`[field: string]: unknown`). An agent server of
// another version may send a kind not listed here: a `switch` on `kind` keeps a default branch
// (a catch-all member would stop TypeScript from narrowing the union on `kind`).

type EventSource = 'agent' | 'user' | 'environment' | 'hook';

interface EventBase {
  id: string;
  timestamp: string;
  source: EventSource;
  parent_id?: string | null;
  [field: string]: unknown;
}

export interface TextContent {
  type: 'text';
  text: string;
}

export interface MessageEvent extends EventBase {
  kind: 'MessageEvent';
  llm_message: { role: 'user' | 'assistant' | 'system' | 'tool'; content: ({ type: string; text?: string } & Record<string, unknown>)[] };
  sender?: string | null;
  activated_skills?: string[];
}

/** A tool call of the agent: its tool's action (`action.kind`: TerminalAction, FileEditorAction, FinishAction, …). */
export interface ActionEvent extends EventBase {
  kind: 'ActionEvent';
  tool_name: string;
  tool_call_id: string;
  action: ({ kind: string } & Record<string, unknown>) | null;
  thought?: TextContent[];
  summary?: string | null;
  security_risk?: string;
}

/** What a tool call gave back (`observation.kind`: TerminalObservation, FileEditorObservation, …). */
export interface ObservationEvent extends EventBase {
  kind: 'ObservationEvent';
  tool_name: string;
  tool_call_id: string;
  action_id: string;
  observation: { kind: string; content?: TextContent[] } & Record<string, unknown>;
}

/** An action rejected in confirmation mode (or by a hook). */
export interface UserRejectObservation extends EventBase {
  kind: 'UserRejectObservation';
  tool_name: string;
  tool_call_id: string;
  action_id: string;
  rejection_reason: string;
}

export interface AgentErrorEvent extends EventBase {
  kind: 'AgentErrorEvent';
  tool_name: string;
  tool_call_id: string;
  error: string;
}

export interface ConversationErrorEvent extends EventBase {
  kind: 'ConversationErrorEvent';
  code: string;
  detail: string;
}

/** A change of the conversation's state (`key`: execution_status, stats, …; `value` its new value). */
export interface ConversationStateUpdateEvent extends EventBase {
  kind: 'ConversationStateUpdateEvent';
  key: string;
  value: unknown;
}

export interface PauseEvent extends EventBase {
  kind: 'PauseEvent';
}

export interface SystemPromptEvent extends EventBase {
  kind: 'SystemPromptEvent';
  system_prompt: TextContent;
}

export interface CondensationEvent extends EventBase {
  kind: 'Condensation';
  summary?: string | null;
}

export type AgentEvent =
  | MessageEvent
  | ActionEvent
  | ObservationEvent
  | UserRejectObservation
  | AgentErrorEvent
  | ConversationErrorEvent
  | ConversationStateUpdateEvent
  | PauseEvent
  | SystemPromptEvent
  | CondensationEvent;
