/**
 * The API's access log line: one JSON object per request (HTTP API context variables), so Logs
 * Insights reads fields directly. What an operator needs to trace a request and see failures,
 * nothing more: ≈ 125 bytes a line instead of ≈ 320 with the user agent, route key, protocol,
 * sizes and integration latency (docs/costs.md; bench/cost.ts measures it). No time
 * field: CloudWatch stamps every event (`@timestamp` in Logs Insights). The request id leads to
 * the function's own lines, which carry the rest.
 */
export const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  path: '$context.path',
  status: '$context.status',
  latencyMs: '$context.responseLatency',
  error: '$context.integrationErrorMessage',
} as const;
