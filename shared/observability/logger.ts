/**
 * Structured JSON log lines (CloudWatch Logs Insights reads them as fields; the alarms' metric
 * filters match on `message` and `level`). Callers pass only safe fields: never a token, key,
 * secret or request body. `LOG_LEVEL=silent` mutes it (tests). In AWS each line names its
 * function (`SERVICE_NAME`). A few dozen lines instead of Powertools Logger: same shape, no
 * dependency in every bundle.
 */
import { logSettings } from '../config/env.ts';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function write(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  const settings = logSettings();
  if (ORDER[level] < (ORDER[(settings.level as Level | 'silent' | undefined) ?? 'info'] ?? ORDER.info)) return;
  const service = settings.service;
  const line = JSON.stringify({ level, time: new Date().toISOString(), ...(service ? { service } : {}), message, ...fields });
  (level === 'error' || level === 'warn' ? process.stderr : process.stdout).write(`${line}\n`);
}

export const logger = {
  debug: (message: string, fields?: Record<string, unknown>) => write('debug', message, fields),
  info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
};

/** An error as log fields: name, message and stack, never the objects hanging off it. */
export const errorFields = (err: unknown): Record<string, unknown> =>
  err instanceof Error ? { errorName: err.name, errorMessage: err.message, stack: err.stack } : { error: String(err) };
