import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice } from '../../ui.tsx';
import { ConsoleSocket, type ConsoleState } from './console-socket.ts';
import { PowerWord } from '../../status-badges.tsx';
import { PowerButtons } from './parts.tsx';
import { adoptTerminalStyles } from './terminal-styles.ts';
import type { TabProps } from './tab.ts';

const HIDE_CURSOR = '\x1b[?25l';

/**
 * The server's console: Wings' websocket (console-socket.ts) drawn by xterm.js. The terminal is
 * read-only (the keyboard stays in the ordinary Command input below it, which sends `send command`);
 * it fits its box as the window changes. The socket is closed when the tab is left.
 */
export default function ConsoleTab({ server, reload }: TabProps) {
  const box = useRef<HTMLDivElement>(null);
  const socket = useRef<ConsoleSocket | null>(null);
  const [state, setState] = useState<ConsoleState>('connecting');
  const [retryIn, setRetryIn] = useState<number>();
  const [power, setPower] = useState<string | null>(server.live.powerState);
  const [error, setError] = useState<unknown>();
  const [command, setCommand] = useState('');
  const [notSent, setNotSent] = useState(false);
  const history = useRef<{ lines: string[]; at: number }>({ lines: [], at: 0 });
  const reloadRef = useRef(reload);
  reloadRef.current = reload;

  // The panel refuses the console of a server suspended, installing or whose install failed (409).
  const install = server.live.installStatus;
  const ready = server.status === 'active' && (install === 'installed' || install === null);
  useEffect(() => {
    const element = box.current;
    if (!element || !ready) return;
    const term = new Terminal({
      disableStdin: true,
      convertEol: true,
      cursorBlink: false,
      cursorStyle: 'underline',
      scrollback: 5000,
      fontSize: 13,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
      theme: { background: '#111418', foreground: '#e6e6e6' },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    const styles = adoptTerminalStyles(() => term.open(element));
    // Tab and Shift+Tab leave the terminal (xterm would keep them: a keyboard trap); the other keys
    // stay for scrolling (Shift+PageUp/PageDown).
    term.attachCustomKeyEventHandler((event) => event.key !== 'Tab');
    const refit = () => {
      try {
        fit.fit();
      } catch {
        // not laid out yet
      }
    };
    refit();
    const resize = new ResizeObserver(refit);
    resize.observe(element);

    let statusSeen = 0;
    term.write(HIDE_CURSOR); // output only: no cursor to suggest typing there
    const line = (text: string) => term.write(`${text}\r\n`);
    const note = (text: string, colour = '33') => line(`\x1b[${colour}m[${text}]\x1b[0m`);
    const feed = new ConsoleSocket({
      credentials: async () => {
        const c = await ok(api().GET('/v1/servers/{id}/console', { params: { path: { id: server.id } } }));
        setError(undefined);
        return c;
      },
      onState: (next, detail) => {
        setState(next);
        setRetryIn(detail?.retryInMs);
      },
      onReplay: () => {
        term.reset();
        term.write(HIDE_CURSOR);
      },
      onError: setError,
      onEvent: (event, args) => {
        switch (event) {
          case 'console output':
          case 'install output':
            for (const a of args) line(a);
            break;
          case 'status':
            setPower(args[0] ?? null);
            note(`server ${args[0]}`);
            // The page's status line reads the API's live state: read it again as the state moves.
            if (statusSeen++ > 0) void reloadRef.current();
            break;
          case 'stats':
            try {
              const stats = JSON.parse(args[0] ?? '{}') as { state?: string };
              if (stats.state) setPower(stats.state);
            } catch {
              // not JSON: ignore
            }
            break;
          case 'install started':
            note('install started');
            break;
          case 'install completed':
            note('install completed', '32');
            break;
          case 'daemon message':
            note(args.join(' '), '36');
            break;
          case 'daemon error':
            note(args.join(' '), '31');
            break;
          default:
            break;
        }
      },
    });
    socket.current = feed;
    feed.start();
    return () => {
      socket.current = null;
      feed.close();
      resize.disconnect();
      term.dispose();
      styles.dispose();
    };
  }, [server.id, ready]);

  const submit = (event: Event) => {
    event.preventDefault();
    const text = command.trim();
    if (!text) return;
    if (!socket.current?.send('send command', [text])) {
      setNotSent(true);
      return;
    }
    setNotSent(false);
    const h = history.current;
    if (h.lines[h.lines.length - 1] !== text) h.lines.push(text);
    h.at = h.lines.length;
    setCommand('');
  };
  const browse = (event: KeyboardEvent) => {
    const h = history.current;
    if (event.key === 'ArrowUp' && h.at > 0) {
      event.preventDefault();
      h.at--;
      setCommand(h.lines[h.at] ?? '');
    } else if (event.key === 'ArrowDown' && h.at < h.lines.length) {
      event.preventDefault();
      h.at++;
      setCommand(h.lines[h.at] ?? '');
    }
  };

  if (!ready) {
    return (
      <p class="notice info" data-testid="console-unavailable">
        The console opens once the server is {server.status === 'active' ? 'installed' : 'active again'}.
      </p>
    );
  }
  return (
    <>
      <div class="console-bar">
        <p class="console-state" role="status">
          Console <span class={`dot ${state}`} aria-hidden="true" />
          <strong data-testid="console-state">{state}</strong>
          {state === 'disconnected' && retryIn ? <span class="muted"> (retrying in {Math.ceil(retryIn / 1000)} s)</span> : null}
        </p>
        <p class="console-state">
          Server <PowerWord state={power} />
        </p>
      </div>
      <ErrorNotice error={error} />
      <div class="console-box" role="log" aria-label="Console output" data-testid="terminal">
        <div class="console-screen" ref={box} />
      </div>
      <form class="console-command" onSubmit={submit}>
        <Field
          id="console-command"
          label="Command"
          hint="Enter sends it; ↑ and ↓ go through the commands sent. The server must be running."
        >
          {(control) => (
            <input
              {...control}
              type="text"
              autocomplete="off"
              spellcheck={false}
              maxLength={1024}
              value={command}
              onInput={(e) => setCommand((e.target as HTMLInputElement).value)}
              onKeyDown={browse}
            />
          )}
        </Field>
        <Button type="submit" kind="primary" disabled={state !== 'connected'}>
          Send
        </Button>
      </form>
      {notSent ? (
        <p class="notice warning" role="alert">
          Not sent: the console is not connected yet.
        </p>
      ) : null}
      <h2>Power</h2>
      <PowerButtons serverId={server.id} />
    </>
  );
}
