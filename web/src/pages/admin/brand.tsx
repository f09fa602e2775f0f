import { useContext, useState } from 'preact/hooks';
import { api, fieldIssues, ok } from '../../api.ts';
import type { Brand } from '../../brand.tsx';
import { BrandContext } from '../../brand-context.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, Loading, Notice, Page, useAction, useLoad } from '../../ui.tsx';
import { AA_NORMAL_TEXT, contrastRatio, DASHBOARD_BACKGROUND, formatRatio, HEX_COLOUR, WHITE } from '../../../../shared/colour/contrast.ts';

type Editable = Omit<Brand, 'logo'>;
const TEXT_FIELDS: { key: keyof Editable; label: string; hint: string; type?: 'email' | 'url' }[] = [
  { key: 'name', label: 'Operator name', hint: 'The header, invoices and credit notes, Checkout and e-mail.' },
  { key: 'supportEmail', label: 'Support e-mail', hint: 'Shown in the footer and in e-mail.', type: 'email' },
  { key: 'supportUrl', label: 'Support page', hint: 'https://…', type: 'url' },
  { key: 'termsUrl', label: 'Terms of service', hint: 'https://…', type: 'url' },
  { key: 'privacyUrl', label: 'Privacy policy', hint: 'https://…', type: 'url' },
  { key: 'legalFooter', label: 'Legal footer', hint: 'One paragraph at the foot of invoices, credit notes and e-mail.' },
];

/**
 * The operator's brand (the setting `brand` of PUT /v1/admin/settings, the logo by
 * PUT /v1/admin/brand/logo) with a live preview of the header and the colour's contrast, computed
 * as the API checks it (shared/colour/contrast.ts): a colour under AA cannot be saved.
 */
export default function BrandPage() {
  const brand = useLoad(() => ok(api().GET('/v1/brand')));
  return (
    <Page title="Brand">
      <Loading state={brand} label="Loading the brand…">
        {(b) => <BrandForm brand={b} />}
      </Loading>
    </Page>
  );
}

const textOf = (b: Editable): Record<keyof Editable, string> =>
  Object.fromEntries(Object.entries(b).map(([k, v]) => [k, typeof v === 'string' ? v : ''])) as Record<keyof Editable, string>;

function BrandForm(props: { brand: Brand }) {
  const shell = useContext(BrandContext);
  const [saved, setSaved] = useState<Brand>(props.brand);
  const { logo: _logo, ...editable } = props.brand;
  const [values, setValues] = useState(() => textOf(editable));
  const [message, setMessage] = useState('');
  const colour = values.primaryColor;
  const valid = HEX_COLOUR.test(colour);
  const onWhite = valid ? contrastRatio(colour, WHITE) : 0;
  const onBackground = valid ? contrastRatio(colour, DASHBOARD_BACKGROUND) : 0;
  const readable = onWhite >= AA_NORMAL_TEXT && onBackground >= AA_NORMAL_TEXT;

  const save = useAction(async () => {
    const body = Object.fromEntries(
      Object.entries(values).map(([k, v]) => [k, v.trim() === '' && k !== 'name' && k !== 'primaryColor' ? null : v.trim()]),
    );
    const settings = await ok(api().PUT('/v1/admin/settings', { body: { brand: body } }));
    setSaved(settings.brand);
    shell.setBrand(settings.brand);
    setMessage('Saved. Customers see the new brand at their next page load.');
  });
  const upload = useAction(async (file: File) => {
    const bytes = new Uint8Array(await file.arrayBuffer());
    let binary = '';
    for (const b of bytes) binary += String.fromCharCode(b);
    const next = await ok(api().PUT('/v1/admin/brand/logo', { body: { dataBase64: btoa(binary) } }));
    setSaved(next);
    shell.setBrand(next);
    setMessage('Logo uploaded.');
  });
  const issues = fieldIssues(save.error);

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        setMessage('');
        void save.run();
      }}
    >
      <section class="brand-preview" aria-label="Preview" data-testid="brand-preview">
        <div class="sample-header" style={{ borderTopColor: valid ? colour : undefined, color: valid && readable ? colour : undefined }}>
          {saved.logo ? <img class="brand-logo" src={saved.logo.url} alt="" /> : null}
          <span>{values.name || 'Operator name'}</span>
        </div>
        {valid && readable ? (
          <span class="sample-button" style={{ background: colour }}>
            Top up
          </span>
        ) : null}
      </section>
      <Field
        id="brand-primaryColor"
        label="Primary colour"
        hint={
          valid
            ? `Contrast ${formatRatio(onWhite)} with white text, ${formatRatio(onBackground)} on the page background: ${readable ? 'passes' : 'fails'} WCAG AA (${AA_NORMAL_TEXT}:1).`
            : 'As #rrggbb.'
        }
        error={issues['brand.primaryColor'] ?? (valid && !readable ? 'Too light to read: choose a darker colour.' : undefined)}
      >
        {(control) => (
          <input
            {...control}
            type="text"
            name="primaryColor"
            autoComplete="off"
            spellcheck={false}
            value={colour}
            data-testid="brand-colour"
            onInput={(e) => setValues({ ...values, primaryColor: e.currentTarget.value })}
          />
        )}
      </Field>
      {TEXT_FIELDS.map((f) => (
        <Field key={f.key} id={`brand-${f.key}`} label={f.label} hint={f.hint} error={issues[`brand.${f.key}`]}>
          {(control) => (
            <input
              {...control}
              type="text"
              inputMode={f.type ?? 'text'}
              name={f.key}
              value={values[f.key]}
              required={f.key === 'name'}
              onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}
            />
          )}
        </Field>
      ))}
      <Field id="brand-logo" label="Logo" hint="PNG or JPEG, at most 256 KB, 16 to 1024 pixels a side (SVG is not taken).">
        {(control) => (
          <input
            {...control}
            type="file"
            accept="image/png,image/jpeg"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              if (file) void upload.run(file);
            }}
          />
        )}
      </Field>
      {save.error && Object.keys(issues).length === 0 ? <ErrorNotice error={save.error} /> : null}
      {upload.error ? <ErrorNotice error={upload.error} /> : null}
      {message ? <Notice kind="success">{message}</Notice> : null}
      <Button type="submit" kind="primary" busy={save.busy} disabled={!valid || !readable}>
        Save the brand
      </Button>
    </form>
  );
}
