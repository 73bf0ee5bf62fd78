// Text matched as itself inside a MongoDB $regex (or a RegExp): the search filters' "contains".
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
