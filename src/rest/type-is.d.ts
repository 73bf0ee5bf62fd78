// The one function of the type-is package the REST edge uses (the package ships no types).
declare module 'type-is' {
  import type { IncomingMessage } from 'node:http';
  /** The request's media type if it matches one of `types`, false if not, null without a body. */
  function typeis(req: IncomingMessage, types: string[]): string | false | null;
  export default typeis;
}
