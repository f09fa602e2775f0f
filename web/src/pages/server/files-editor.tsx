import { useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { bytes } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';

/** What files/write takes (docs/api.md): larger files are refused; SFTP has no limit. */
const WRITE_LIMIT = 512 * 1024;

/** A text file in a textarea: read with files/contents, saved with files/write. */
export function FileEditor(props: { serverId: string; path: string; onClose: () => void }) {
  const { serverId, path } = props;
  const file = useLoad(
    () => ok(api().GET('/v1/servers/{id}/files/contents', { params: { path: { id: serverId }, query: { file: path } } })),
    [serverId, path],
  );
  const [text, setText] = useState<string | undefined>(undefined);
  const [saved, setSaved] = useState<{ bytes: number; at: string } | null>(null);
  const save = useAction(async () => {
    const content = text ?? file.data?.content ?? '';
    const result = await ok(
      api().POST('/v1/servers/{id}/files/write', { params: { path: { id: serverId } }, body: { file: path, content } }),
    );
    setSaved({ bytes: result.bytes, at: new Date().toLocaleTimeString() });
  });
  const content = text ?? file.data?.content ?? '';
  const size = new TextEncoder().encode(content).length;
  return (
    <section class="card" aria-labelledby="file-editor-title">
      <div class="page-head">
        <h2 id="file-editor-title">
          Editing <code>{path}</code>
        </h2>
        <Button onClick={props.onClose}>Back to the folder</Button>
      </div>
      <Loading state={file} label={`Reading ${path}…`}>
        {() => (
          <form
            onSubmit={(event) => {
              event.preventDefault();
              setSaved(null);
              void save.run();
            }}
          >
            <Field
              id="file-editor"
              label={`Contents of ${path.slice(path.lastIndexOf('/') + 1)}`}
              hint={
                <>
                  {bytes(size)} of at most {bytes(WRITE_LIMIT)} that can be saved here; edit larger files over SFTP.
                  {size > WRITE_LIMIT ? ' This file is over the limit: saving it will be refused.' : ''}
                </>
              }
            >
              {(control) => (
                <textarea
                  {...control}
                  class="file-editor"
                  spellcheck={false}
                  value={content}
                  onInput={(event) => {
                    setText(event.currentTarget.value);
                    setSaved(null);
                  }}
                />
              )}
            </Field>
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
