import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { bytes } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import type { CodeEditor } from './code-editor.ts';
import { type ConfigFormat, configFormat } from './config-format.ts';

/** What files/write takes (docs/api.md): larger files are refused; SFTP has no limit. */
const WRITE_LIMIT = 512 * 1024;

const FORMAT_NAMES: Record<ConfigFormat, string> = {
  properties: 'Properties',
  yaml: 'YAML',
  json: 'JSON',
  toml: 'TOML',
  ini: 'INI',
  shell: 'Shell script',
};

/**
 * A text file, read with files/contents and saved with files/write. Config formats (properties,
 * YAML, JSON, TOML, INI, shell) open in CodeMirror with highlighting, loaded with import() on first
 * use (code-editor.ts); other files, or if that chunk cannot load, in a plain textarea.
 */
export function FileEditor(props: { serverId: string; path: string; onClose: () => void }) {
  const { serverId, path } = props;
  const file = useLoad(
    () => ok(api().GET('/v1/servers/{id}/files/contents', { params: { path: { id: serverId }, query: { file: path } } })),
    [serverId, path],
  );
  const [text, setText] = useState<string | undefined>(undefined);
  const [saved, setSaved] = useState<{ bytes: number; at: string } | null>(null);
  const format = configFormat(path);
  const save = useAction(async () => {
    const content = text ?? file.data?.content ?? '';
    const result = await ok(
      api().POST('/v1/servers/{id}/files/write', { params: { path: { id: serverId } }, body: { file: path, content } }),
    );
    setSaved({ bytes: result.bytes, at: new Date().toLocaleTimeString() });
  });
  const content = text ?? file.data?.content ?? '';
  const size = new TextEncoder().encode(content).length;
  const name = path.slice(path.lastIndexOf('/') + 1);
  const hint = (
    <>
      {bytes(size)} of at most {bytes(WRITE_LIMIT)} that can be saved here; edit larger files over SFTP.
      {size > WRITE_LIMIT ? ' This file is over the limit: saving it will be refused.' : ''}
    </>
  );
  const edited = (value: string) => {
    setText(value);
    setSaved(null);
  };
  return (
    <section class="card" aria-labelledby="file-editor-title">
      <div class="page-head">
        <h2 id="file-editor-title">
          Editing <code>{path}</code>
        </h2>
        <Button onClick={props.onClose}>Back to the folder</Button>
      </div>
      <Loading state={file} label={`Reading ${path}…`}>
        {(loaded) => (
          <form
            onSubmit={(event) => {
              event.preventDefault();
              setSaved(null);
              void save.run();
            }}
          >
            {format ? (
              <HighlightedEditor key={path} doc={loaded.content} format={format} name={name} hint={hint} onChange={edited} />
            ) : (
              <PlainEditor name={name} hint={hint} value={content} onChange={edited} />
            )}
            <ErrorNotice error={save.error} onDismiss={save.clearError} />
            {save.busy ? <p role="status">Saving {path}…</p> : null}
            {saved ? (
              <Notice kind="success">
                Saved {bytes(saved.bytes)} to {path} at {saved.at}.
              </Notice>
            ) : null}
            <div class="actions">
              <Button type="submit" kind="primary" busy={save.busy}>
                Save
              </Button>
            </div>
          </form>
        )}
      </Loading>
    </section>
  );
}

function PlainEditor(props: { name: string; hint: preact.ComponentChildren; value: string; onChange: (value: string) => void }) {
  return (
    <Field id="file-editor" label={`Contents of ${props.name}`} hint={props.hint}>
      {(control) => (
        <textarea
          {...control}
          class="file-editor"
          spellcheck={false}
          value={props.value}
          onInput={(event) => props.onChange(event.currentTarget.value)}
        />
      )}
    </Field>
  );
}

/** CodeMirror in the place of the textarea, labelled the same way; the textarea while it loads or if it cannot. */
function HighlightedEditor(props: {
  doc: string;
  format: ConfigFormat;
  name: string;
  hint: preact.ComponentChildren;
  onChange: (value: string) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const [state, setState] = useState<'loading' | 'ready' | 'failed'>('loading');
  const [fallback, setFallback] = useState(props.doc);
  useEffect(() => {
    let editor: CodeEditor | null = null;
    let gone = false;
    import('./code-editor.ts')
      .then(({ mountCodeEditor }) => {
        if (gone || !host.current) return;
        editor = mountCodeEditor(host.current, {
          doc: props.doc,
          format: props.format,
          id: 'file-editor',
          label: `Contents of ${props.name} (${FORMAT_NAMES[props.format]})`,
          onChange: (value) => onChange.current(value),
        });
        setState('ready');
      })
      .catch(() => !gone && setState('failed'));
    return () => {
      gone = true;
      editor?.destroy();
    };
  }, [props.doc, props.format, props.name]);
  if (state === 'failed')
    return (
      <PlainEditor
        name={props.name}
        hint={props.hint}
        value={fallback}
        onChange={(value) => {
          setFallback(value);
          props.onChange(value);
        }}
      />
    );
  return (
    <div class="field">
      <span class="label" aria-hidden="true">
        Contents of {props.name} ({FORMAT_NAMES[props.format]})
      </span>
      {state === 'loading' ? <p role="status">Loading the editor…</p> : null}
      <div ref={host} class="code-editor" data-testid="code-editor" />
      <small class="hint">{props.hint}</small>
    </div>
  );
}
