/**
 * Labels: a string map on servers, API keys and webhook endpoints, for the caller's own
 * organization (the service never reads them). The rules follow Kubernetes labels: a key is an
 * optional DNS-style prefix and `/`, then a name; a value is empty or a name; at most MAX_LABELS.
 */

export const MAX_LABELS = 32;
/** 1–63 characters: letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit. */
const NAME = /^[a-zA-Z0-9](?:[-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$/;
/** A DNS subdomain of at most 253 characters: lower-case labels of letters, digits and `-`, joined by dots. */
const PREFIX = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*$/;

export type Labels = Record<string, string>;

/** Why a key is not a label key, or undefined when it is one. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  // Short messages: this module is in the servers function's start; docs/api.md (Labels) has the rules.
  if (prefix !== undefined && !PREFIX.test(prefix)) return `\`${key}\`: the prefix is not a DNS name`;
  if (!NAME.test(name)) return `\`${key}\` is not a label key`;
  return undefined;
}

/** Why a value is not a label value, or undefined when it is one. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '' || NAME.test(value)) return undefined;
  return `\`${value}\` is not a label value`;
}
