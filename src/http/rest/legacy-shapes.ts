// The body shapes of the legacy REST surface's error answers: how each is built from an
// error's message, and its JSON Schema (components of the OpenAPI document). The table in
// legacy-errors.ts says which failure answers with which shape.

export interface BodyShape {
  /** Name of the shape's schema under components.schemas. */
  schema: keyof typeof BODY_SCHEMAS;
  /** fields: the ids the failure is about (AppError.fields), for bodies that name them. */
  build(message: string, fields: Record<string, string>): unknown;
}

const stringProperty = { type: 'string' } as const;
const object = (properties: Record<string, object>) => ({ type: 'object', properties, required: Object.keys(properties) });

export const BODY_SCHEMAS = {
  ErrorDetail: object({ detail: stringProperty }),
  ErrorError: object({ error: stringProperty }),
  ErrorMessage: object({ message: stringProperty }),
  ErrorKeys: object({ error: stringProperty, keys: { type: 'array', items: stringProperty } }),
  V0Error: object({ status: { type: 'string', const: 'error' }, message: stringProperty, msg_id: stringProperty }),
  V0ActionError: object({ status: { type: 'string', const: 'error' }, conversation_id: stringProperty, message: stringProperty }),
  V0ActionNotFound: object({ status: { type: 'string', const: 'error' }, conversation_id: stringProperty }),
  ErrorString: stringProperty,
  QuotaError: object({
    detail: object({
      code: stringProperty,
      message: stringProperty,
      limit: { type: 'integer' },
      used: { type: 'integer' },
      reset_at: stringProperty,
    }),
  }),
  OAuthError: {
    type: 'object',
    properties: { error: stringProperty, error_description: stringProperty, interval: { type: 'integer' } },
    required: ['error', 'error_description'],
  },
  HTTPValidationError: object({
    detail: {
      type: 'array',
      items: object({
        type: stringProperty,
        loc: { type: 'array', items: { anyOf: [stringProperty, { type: 'integer' }] } },
        msg: stringProperty,
      }),
    },
  }),
} as const;

export const BODY_SHAPES = {
  detail: { schema: 'ErrorDetail', build: (message) => ({ detail: message }) },
  errorKey: { schema: 'ErrorError', build: (message) => ({ error: message }) },
  messageKey: { schema: 'ErrorMessage', build: (message) => ({ message }) },
  /** The 2026 settings' refusal of legacy keys: the message and the keys (AppError.fields.keys, comma-separated). */
  errorKeys: {
    schema: 'ErrorKeys',
    build: (message, fields) => ({ error: message, keys: (fields.keys ?? '').split(',').filter(Boolean) }),
  },
  /** The daily conversation limit: the reference's structured detail (fields.limit, used, reset_at). */
  quotaDetail: {
    schema: 'QuotaError',
    build: (message, fields) => ({
      detail: {
        code: 'daily_conversation_limit_reached',
        message,
        limit: fields.limit ? Number(fields.limit) : null,
        used: fields.used ? Number(fields.used) : null,
        reset_at: fields.reset_at ?? null,
      },
    }),
  },
  /** Legacy: the reference answers a bare JSON string. */
  bareString: { schema: 'ErrorString', build: (message) => message },
  /** Legacy: the reference hides which thing was missing. */
  plainNotFound: { schema: 'ErrorDetail', build: () => ({ detail: 'Not Found' }) },
  validation: { schema: 'HTTPValidationError', build: (message) => ({ detail: [{ type: 'value_error', loc: ['body'], msg: message }] }) },
  /** A field the service cannot honour, refused as pydantic would refuse it (fields.field: its dotted path in the body). */
  fieldValidation: {
    schema: 'HTTPValidationError',
    build: (message, fields) => ({
      detail: [{ type: 'value_error', loc: ['body', ...(fields.field ? fields.field.split('.') : [])], msg: message }],
    }),
  },
  /** The V0 start/stop error body: the conversation id and why. */
  v0Action: {
    schema: 'V0ActionError',
    build: (message, fields) => ({ status: 'error', conversation_id: fields.conversation_id ?? null, message }),
  },
  /** The V0 start/stop body for an unknown conversation: only its id. */
  v0ActionNotFound: {
    schema: 'V0ActionNotFound',
    build: (_message, fields) => ({ status: 'error', conversation_id: fields.conversation_id ?? null }),
  },
  /** The device flow's token errors (RFC 8628): the OAuth code, words, and on slow_down the interval to keep. */
  oauthError: (code: string): BodyShape => ({
    schema: 'OAuthError',
    build: (message, fields) => ({
      error: code,
      error_description: message,
      ...(fields.interval ? { interval: Number(fields.interval) } : {}),
    }),
  }),
  /** The V0 conversation routes' error body, with the frontend's i18n message id. */
  v0Status: (msgId: string): BodyShape => ({ schema: 'V0Error', build: (message) => ({ status: 'error', message, msg_id: msgId }) }),
} satisfies Record<string, BodyShape | ((msgId: string) => BodyShape)>;
