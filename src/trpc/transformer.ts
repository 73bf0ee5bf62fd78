// The one data transformer for tRPC, shared by the server and every client link.
// Import this file rather than superjson directly so both ends always match.
export { default as transformer } from 'superjson';
