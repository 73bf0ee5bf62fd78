// The service's tRPC data transformer (superjson): every link must use this one.
export { default as transformer } from 'superjson';
