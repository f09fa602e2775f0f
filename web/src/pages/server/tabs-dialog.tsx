/** The `details.issues` of a validation error as field → message (`body.variables.X` → "…"). */
export function fieldIssues(error: unknown): Record<string, string> {
  const issues = (error as { details?: { issues?: { field: string; message: string }[] } } | null)?.details?.issues;
  const out: Record<string, string> = {};
  for (const issue of Array.isArray(issues) ? issues : []) out[issue.field] = issue.message;
  return out;
}
