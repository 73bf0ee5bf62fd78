// The functions of the type-is package the HTTP wing uses (the package ships no types).
declare module 'type-is' {
  import type { IncomingMessage } from 'node:http';
  /** The request's media type if it matches one of `types`, false if not, null without a body. */
  function typeis(req: IncomingMessage, types: string[]): string | false | null;
  namespace typeis {
    /** A media type (a Content-Type value) if it matches one of `types`, else false. */
    function is(mediaType: string, types: string[]): string | false;
    /** Whether the request has a body (Transfer-Encoding, or a Content-Length, even 0). */
    function hasBody(req: IncomingMessage): boolean;
  }
  export default typeis;
}
