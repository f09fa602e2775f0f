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
  options: { doc: string; format: ConfigFormat; id: string; labelledBy: string; describedBy?: string; onChange: (text: string) => void },
): CodeEditor {
  const view = new EditorView({
    parent,
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
        EditorView.contentAttributes.of({
          id: options.id,
          'aria-labelledby': options.labelledBy,
          ...(options.describedBy ? { 'aria-describedby': options.describedBy } : {}),
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
