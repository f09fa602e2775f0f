/** The config formats the file editor highlights (code-editor.ts); anything else is edited as plain text. */
export type ConfigFormat = 'properties' | 'yaml' | 'json' | 'toml' | 'ini' | 'shell';

const BY_EXTENSION: Record<string, ConfigFormat> = {
  properties: 'properties',
  yml: 'yaml',
  yaml: 'yaml',
  json: 'json',
  json5: 'json',
  mcmeta: 'json',
  toml: 'toml',
  ini: 'ini',
  cfg: 'ini',
  conf: 'ini',
  sh: 'shell',
  bash: 'shell',
};

/** `server.properties` → properties, `config.yml` → yaml, `start.sh` → shell; null for anything else. */
export function configFormat(path: string): ConfigFormat | null {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  const dot = name.lastIndexOf('.');
  return dot > 0 ? (BY_EXTENSION[name.slice(dot + 1)] ?? null) : null;
}
