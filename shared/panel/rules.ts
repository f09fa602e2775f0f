/**
 * An egg variable's validation rules as a list, one a rule. Pterodactyl keeps one string, which
 * Laravel splits at every `|` (`ValidationRuleParser::explodeExplicitRule`); Pelican keeps an array
 * of strings (pelican-dev/panel app/Models/EggVariable.php, `'rules' => 'array'`), each one rule.
 */
export const ruleList = (rules: readonly string[] | string | null | undefined): string[] =>
  Array.isArray(rules)
    ? [...rules]
    : String(rules ?? '')
        .split('|')
        .filter((r) => r.trim() !== '');

/** The rules as one Laravel string, as the API shows them (`required|string|max:20`). */
export const ruleText = (rules: readonly string[] | string): string => ruleList(rules).join('|');
