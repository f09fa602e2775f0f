import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { json } from '@codemirror/lang-json';
import { yaml } from '@codemirror/lang-yaml';
import { defaultHighlightStyle, type LanguageSupport, StreamLanguage, syntaxHighlighting } from '@codemirror/language';
import { properties } from '@codemirror/legacy-modes/mode/properties';
import { shell } from '@codemirror/legacy-modes/mode/shell';
import { toml } from '@codemirror/legacy-modes/mode/toml';
import { EditorState, type Extension } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import type { ConfigFormat } from './config-format.ts';

/**
 * The file editor's CodeMirror 6 view, in a chunk of its own: files-editor.tsx imports it with
 * import() only when a config file is opened, so neither the first page nor the files list carries it.
 * No Tab binding: Tab moves the focus on, as everywhere else on the page.
 * In a shadow root: there CodeMirror's styles go in as adopted style sheets, which the dashboard's
 * Content-Security-Policy (style-src 'self') allows; in the document it would add a <style> element,
 * which the policy refuses. Labels cannot point across the shadow boundary, so the content is named
 * with aria-label.
 */
const languages: Record<ConfigFormat, () => Extension | LanguageSupport> = {
  properties: () => StreamLanguage.define(properties),
  ini: () => StreamLanguage.define(properties),
  toml: () => StreamLanguage.define(toml),
  shell: () => StreamLanguage.define(shell),
  yaml: () => yaml(),
  json: () => json(),
};

export interface CodeEditor {
  text(): string;
  destroy(): void;
}

export function mountCodeEditor(
  parent: HTMLElement,
  options: { doc: string; format: ConfigFormat; id: string; label: string; onChange: (text: string) => void },
): CodeEditor {
  const root = parent.shadowRoot ?? parent.attachShadow({ mode: 'open' });
  const view = new EditorView({
    root,
    parent: root,
    state: EditorState.create({
      doc: options.doc,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        highlightActiveLine(),
        keymap.of([...defaultKeymap, ...historyKeymap]),
        syntaxHighlighting(defaultHighlightStyle),
        languages[options.format](),
        EditorView.lineWrapping,
        // The page's colours (custom properties inherit into the shadow root), light or dark.
        EditorView.theme({
          '&': { minHeight: '320px', color: 'var(--text)', backgroundColor: 'var(--panel)' },
          '&.cm-focused': { outline: '2px solid var(--focus)' },
          '.cm-gutters': { backgroundColor: 'var(--bg)', color: 'var(--muted)', borderRight: '1px solid var(--muted)' },
          '.cm-content': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', caretColor: 'var(--text)' },
          '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'color-mix(in srgb, var(--focus) 8%, transparent)' },
        }),
        EditorView.contentAttributes.of({
          id: options.id,
          'aria-label': options.label,
          spellcheck: 'false',
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) options.onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return { text: () => view.state.doc.toString(), destroy: () => view.destroy() };
}
