// Default seed: 2 locations, 3 nodes (different sizes, one overallocating),
// allocations on each node, 2 nests / 4 eggs with Laravel-rule variables, an
// admin (owner of the application key) and a non-admin service user with a
// client key. Ids are stable; see SEED_IDS.
import { randomUUID } from 'node:crypto';
import { randomString } from './state.ts';
import type { Egg, EggSimProfile, EggVariable, PanelState } from './state.ts';

/** Deterministic default keys (48 chars: 16-char identifier + 32-char secret). */
export const DEFAULT_APP_KEY = 'ptla_simappkey01panelsimapplicationkeysecret0001';
export const DEFAULT_CLIENT_KEY = 'ptlc_simclientk1panelsimserviceuserclientsecret1';

export const SEED_IDS = {
  locations: { euCentral: 1, usEast: 2 },
  nodes: { fra1: 1, fra2: 2, nyc1: 3 },
  nests: { minecraft: 1, generic: 2 },
  eggs: { paper: 1, vanilla: 2, rust: 3, nodejs: 4 },
  users: { admin: 1, service: 2 },
} as const;

export interface SeedResult {
  appKey: string;
  clientKey: string;
  adminUserId: number;
  serviceUserId: number;
}

export interface SeedOptions {
  appKey?: string;
  clientKey?: string;
}

function ts(): Date {
  return new Date();
}

/** Users + keys only (used by both seeds). */
function seedUsers(state: PanelState, opts: SeedOptions): SeedResult {
  const admin = state.createUser({
    email: 'admin@panel.local',
    username: 'admin',
    first_name: 'Panel',
    last_name: 'Admin',
    root_admin: true,
  });
  const service = state.createUser({
    email: 'control-plane@panel.local',
    username: 'control-plane',
    first_name: 'Control',
    last_name: 'Plane',
    external_id: 'control-plane',
    root_admin: false,
  });
  const app = state.createKey(admin.id, 'application', opts.appKey ?? DEFAULT_APP_KEY);
  const client = state.createKey(service.id, 'account', opts.clientKey ?? DEFAULT_CLIENT_KEY);
  return { appKey: app.token, clientKey: client.token, adminUserId: admin.id, serviceUserId: service.id };
}

export function seedEmpty(state: PanelState, opts: SeedOptions = {}): SeedResult {
  return seedUsers(state, opts);
}

export function seedDefault(state: PanelState, opts: SeedOptions = {}): SeedResult {
  const result = seedUsers(state, opts);
  const now = ts();

  for (const [short, long] of [
    ['eu-central', 'Frankfurt, Germany'],
    ['us-east', 'Ashburn, Virginia, USA'],
  ] as const) {
    const id = state.nextId('locations');
    state.locations.set(id, { id, short, long, created_at: now, updated_at: now });
  }

  const nodes = [
    { name: 'fra-1', location: 1, memory: 32768, mo: 0, disk: 512000, dovr: 0, ip: '10.10.1.10' },
    { name: 'fra-2', location: 1, memory: 16384, mo: 50, disk: 256000, dovr: 20, ip: '10.10.1.20' },
    { name: 'nyc-1', location: 2, memory: 65536, mo: 0, disk: 1024000, dovr: 0, ip: '10.20.1.10' },
  ];
  for (const n of nodes) {
    const id = state.nextId('nodes');
    state.nodes.set(id, {
      id,
      uuid: randomUUID(),
      public: true,
      name: n.name,
      description: null,
      location_id: n.location,
      fqdn: `${n.name}.nodes.panel.local`,
      scheme: 'https',
      behind_proxy: false,
      maintenance_mode: false,
      memory: n.memory,
      memory_overallocate: n.mo,
      disk: n.disk,
      disk_overallocate: n.dovr,
      upload_size: 100,
      daemon_listen: 8080,
      daemon_sftp: 2022,
      daemon_base: '/var/lib/pterodactyl/volumes',
      created_at: now,
      updated_at: now,
      daemon_token_id: randomString(16),
      daemon_token: randomString(64),
    });
    // 25565-25579 (game ports) and 28015-28019 (Rust-style) on the node's IP.
    for (const port of [...range(25565, 25579), ...range(28015, 28019)]) {
      const aid = state.nextId('allocations');
      state.allocations.set(aid, { id: aid, node_id: id, ip: n.ip, ip_alias: null, port, server_id: null, notes: null });
    }
  }

  const nestMc = state.nextId('nests');
  state.nests.set(nestMc, {
    id: nestMc,
    uuid: randomUUID(),
    author: 'support@pterodactyl.io',
    name: 'Minecraft',
    description: 'Minecraft - the classic game from Mojang. With support for Vanilla MC, Spigot, and many others!',
    created_at: now,
    updated_at: now,
  });
  const nestGeneric = state.nextId('nests');
  state.nests.set(nestGeneric, {
    id: nestGeneric,
    uuid: randomUUID(),
    author: 'support@pterodactyl.io',
    name: 'Generic',
    description: 'Other games and generic applications.',
    created_at: now,
    updated_at: now,
  });

  const javaImages = {
    'Java 21': 'ghcr.io/pterodactyl/yolks:java_21',
    'Java 17': 'ghcr.io/pterodactyl/yolks:java_17',
    'Java 11': 'ghcr.io/pterodactyl/yolks:java_11',
    'Java 8': 'ghcr.io/pterodactyl/yolks:java_8',
  };
  const mcConfig = {
    files: {
      'server.properties': {
        parser: 'properties',
        find: { 'server-ip': '0.0.0.0', 'server-port': '{{server.build.default.port}}', 'query.port': '{{server.build.default.port}}' },
      },
    },
    startup: { done: ')! For help, type ' },
    stop: 'stop',
    logs: [],
    file_denylist: [],
    extends: null,
  };
  const mcFiles = (jar: string): Record<string, string> => ({
    'server.properties':
      'motd=A Minecraft Server\nserver-ip=0.0.0.0\nserver-port={{SERVER_PORT}}\nquery.port={{SERVER_PORT}}\nmax-players=20\nonline-mode=true\n',
    'eula.txt':
      '#By changing the setting below to TRUE you are indicating your agreement to our EULA (https://aka.ms/MinecraftEULA).\neula=true\n',
    'logs/latest.log': '[00:00:00 INFO]: Log file created by the installer.\n',
    [jar]: 'PK\u0003\u0004 (simulated jar)',
    'plugins/': '',
  });
  const mcSim = (jar: string): EggSimProfile => ({
    files: mcFiles(jar),
    boot: ['Starting minecraft server version 1.21.1', 'Loading properties', 'Default game type: SURVIVAL', 'Preparing level "world"'],
    done: 'Done (3.412s)! For help, type "help"',
    stopping: ['Stopping the server', 'Saving players', 'Saving worlds'],
    baseMemoryMiB: 1400,
  });

  addEgg(state, {
    nest_id: nestMc,
    name: 'Paper',
    author: 'parker@pterodactyl.io',
    description: 'High performance Spigot fork that aims to fix gameplay and mechanics inconsistencies.',
    features: ['eula', 'java_version', 'pid_limit'],
    docker_images: javaImages,
    config: mcConfig,
    startup: 'java -Xms128M -XX:MaxRAMPercentage=95.0 -Dterminal.jline=false -Dterminal.ansi=true -jar {{SERVER_JARFILE}}',
    script: {
      privileged: true,
      install: '#!/bin/ash\n# Paper Installation Script\n',
      entry: 'ash',
      container: 'ghcr.io/pterodactyl/installers:alpine',
      extends: null,
    },
    sim: mcSim('server.jar'),
    variables: [
      {
        name: 'Minecraft Version',
        description: 'The version of minecraft to download. Leave at latest to always get the latest version.',
        env_variable: 'MINECRAFT_VERSION',
        default_value: 'latest',
        user_viewable: true,
        user_editable: true,
        rules: 'required|string|max:20',
      },
      {
        name: 'Server Jar File',
        description: 'The name of the server jarfile to run the server with.',
        env_variable: 'SERVER_JARFILE',
        default_value: 'server.jar',
        user_viewable: true,
        user_editable: true,
        rules: 'required|regex:/^([\\w\\d._-]+)(\\.jar)$/',
      },
      {
        name: 'Download Path',
        description: 'A URL to use to download a server.jar rather than the ones in the install script. This is not user viewable.',
        env_variable: 'DL_PATH',
        default_value: '',
        user_viewable: false,
        user_editable: false,
        rules: 'nullable|string',
      },
      {
        name: 'Build Number',
        description: 'The build number for the paper release.',
        env_variable: 'BUILD_NUMBER',
        default_value: 'latest',
        user_viewable: true,
        user_editable: true,
        rules: 'required|max:20',
      },
    ],
  });

  addEgg(state, {
    nest_id: nestMc,
    name: 'Vanilla Minecraft',
    author: 'support@pterodactyl.io',
    description: 'Minecraft is a game about placing blocks and going on adventures.',
    features: ['eula', 'java_version', 'pid_limit'],
    docker_images: javaImages,
    config: mcConfig,
    startup: 'java -Xms128M -XX:MaxRAMPercentage=95.0 -jar {{SERVER_JARFILE}}',
    script: {
      privileged: true,
      install: '#!/bin/ash\n# Vanilla MC Installation Script\n',
      entry: 'ash',
      container: 'ghcr.io/pterodactyl/installers:alpine',
      extends: null,
    },
    sim: mcSim('server.jar'),
    variables: [
      {
        name: 'Server Jar File',
        description: 'The name of the server jarfile to run the server with.',
        env_variable: 'SERVER_JARFILE',
        default_value: 'server.jar',
        user_viewable: true,
        user_editable: true,
        rules: 'required|regex:/^([\\w\\d._-]+)(\\.jar)$/',
      },
      {
        name: 'Server Version',
        description: 'The version of Minecraft Vanilla to install. Use "latest" to install the latest version.',
        env_variable: 'VANILLA_VERSION',
        default_value: 'latest',
        user_viewable: true,
        user_editable: true,
        rules: 'required|string|between:3,15',
      },
    ],
  });

  addEgg(state, {
    nest_id: nestGeneric,
    name: 'Rust',
    author: 'support@pterodactyl.io',
    description: 'The only aim in Rust is to survive.',
    features: ['steam_disk_space'],
    docker_images: { 'ghcr.io/pterodactyl/games:rust': 'ghcr.io/pterodactyl/games:rust' },
    config: { files: {}, startup: { done: 'Server startup complete' }, stop: 'quit', logs: [], file_denylist: [], extends: null },
    startup:
      './RustDedicated -batchmode +server.port {{SERVER_PORT}} +server.identity "rust" +rcon.port {{RCON_PORT}} +rcon.web true +server.hostname \\"{{HOSTNAME}}\\" +server.level \\"{{LEVEL}}\\" +server.worldsize \\"{{WORLD_SIZE}}\\" +server.seed \\"{{WORLD_SEED}}\\" +server.maxplayers {{MAX_PLAYERS}} +rcon.password \\"{{RCON_PASS}}\\"',
    script: {
      privileged: true,
      install: '#!/bin/bash\n# steamcmd install\n',
      entry: 'bash',
      container: 'ghcr.io/pterodactyl/installers:debian',
      extends: null,
    },
    sim: {
      files: {
        RustDedicated: '\u007fELF (simulated binary)',
        'server/rust/cfg/server.cfg': 'server.hostname "A Rust Server"\n',
        'logs/latest.log': 'Installer finished.\n',
      },
      boot: ['Loading Prefab Bundle', 'Generating procedural map of size {{WORLD_SIZE}}', 'SteamServer Initialized'],
      done: 'Server startup complete',
      stopping: ['Saving complete', 'Server shutting down'],
      baseMemoryMiB: 5200,
    },
    variables: [
      {
        name: 'Server Name',
        description: 'The name of your server in the public server list.',
        env_variable: 'HOSTNAME',
        default_value: 'A Rust Server',
        user_viewable: true,
        user_editable: true,
        rules: 'required|string|max:60',
      },
      {
        name: 'Level',
        description: 'The world file for Rust to use.',
        env_variable: 'LEVEL',
        default_value: 'Procedural Map',
        user_viewable: true,
        user_editable: true,
        rules: 'required|string|in:Procedural Map,Barren,HapisIsland,SavasIsland',
      },
      {
        name: 'World Size',
        description: 'The world size for a procedural map.',
        env_variable: 'WORLD_SIZE',
        default_value: '3000',
        user_viewable: true,
        user_editable: true,
        rules: 'required|integer|between:1000,6000',
      },
      {
        name: 'World Seed',
        description: 'The seed for a procedural map.',
        env_variable: 'WORLD_SEED',
        default_value: '',
        user_viewable: true,
        user_editable: true,
        rules: 'nullable|integer|between:0,2147483647',
      },
      {
        name: 'Max Players',
        description: 'The maximum amount of players allowed in the server at once.',
        env_variable: 'MAX_PLAYERS',
        default_value: '40',
        user_viewable: true,
        user_editable: true,
        rules: 'required|integer|min:1|max:500',
      },
      {
        name: 'RCON Password',
        description: 'RCON access password.',
        env_variable: 'RCON_PASS',
        default_value: 'CHANGEME',
        user_viewable: true,
        user_editable: true,
        rules: 'required|regex:/^[\\w.-]*$/|max:64',
      },
      {
        name: 'RCON Port',
        description: 'Port for RCON connections.',
        env_variable: 'RCON_PORT',
        default_value: '28016',
        user_viewable: true,
        user_editable: false,
        rules: 'required|integer',
      },
      {
        name: 'Modding Framework',
        description: 'The modding framework to install.',
        env_variable: 'FRAMEWORK',
        default_value: 'vanilla',
        user_viewable: true,
        user_editable: true,
        rules: 'required|string|in:vanilla,oxide,carbon',
      },
    ],
  });

  addEgg(state, {
    nest_id: nestGeneric,
    name: 'Node.js App',
    author: 'parker@parkervcp.com',
    description: 'A generic Node.js application egg.',
    features: null,
    docker_images: {
      'Nodejs 22': 'ghcr.io/parkervcp/yolks:nodejs_22',
      'Nodejs 20': 'ghcr.io/parkervcp/yolks:nodejs_20',
    },
    config: { files: {}, startup: { done: 'change this text 1' }, stop: '^^C', logs: [], file_denylist: [], extends: null },
    startup:
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the egg's startup command, read by the panel's shell
      'if [[ -d .git ]] && [[ {{AUTO_UPDATE}} == "1" ]]; then git pull; fi; if [[ ! -z ${NODE_PACKAGES} ]]; then /usr/local/bin/npm install ${NODE_PACKAGES}; fi; if [ -f /home/container/package.json ]; then /usr/local/bin/npm install; fi; /usr/local/bin/node /home/container/{{JS_FILE}}',
    script: {
      privileged: true,
      install: '#!/bin/bash\n# NodeJS App Installation Script\n',
      entry: 'bash',
      container: 'node:22-bookworm-slim',
      extends: null,
    },
    sim: {
      files: {
        'index.js': "console.log('change this text 1');\nsetInterval(() => {}, 1000);\n",
        'package.json': '{\n  "name": "app",\n  "version": "1.0.0",\n  "main": "index.js"\n}\n',
        'logs/latest.log': '',
      },
      boot: ['npm notice', 'up to date, audited 1 package in 312ms'],
      done: 'change this text 1',
      stopping: [],
      baseMemoryMiB: 90,
    },
    variables: [
      {
        name: 'Git Repo Address',
        description: 'GitHub Repo to clone.',
        env_variable: 'GIT_ADDRESS',
        default_value: '',
        user_viewable: true,
        user_editable: true,
        rules: 'nullable|string',
      },
      {
        name: 'Install Branch',
        description: 'The branch to install.',
        env_variable: 'BRANCH',
        default_value: '',
        user_viewable: true,
        user_editable: true,
        rules: 'nullable|string',
      },
      {
        name: 'User Uploaded Files',
        description: 'Skip all the install stuff if you are letting a user upload files. 0 = false (default), 1 = true',
        env_variable: 'USER_UPLOAD',
        default_value: '0',
        user_viewable: true,
        user_editable: true,
        rules: 'required|boolean',
      },
      {
        name: 'Auto Update',
        description: 'Pull the latest files on startup when using a GitHub repo.',
        env_variable: 'AUTO_UPDATE',
        default_value: '0',
        user_viewable: true,
        user_editable: true,
        rules: 'required|boolean',
      },
      {
        name: 'Main file',
        description: 'The file that starts the app.',
        env_variable: 'JS_FILE',
        default_value: 'index.js',
        user_viewable: true,
        user_editable: true,
        rules: 'required|string|max:16',
      },
      {
        name: 'Additional Node packages',
        description: 'Install additional node packages.',
        env_variable: 'NODE_PACKAGES',
        default_value: '',
        user_viewable: true,
        user_editable: true,
        rules: 'nullable|string',
      },
      {
        name: 'App Name',
        description: 'Name of the application (letters, numbers, dashes, underscores).',
        env_variable: 'APP_NAME',
        default_value: 'my-app',
        user_viewable: true,
        user_editable: true,
        rules: 'required|alpha_dash|max:32',
      },
      {
        name: 'Node Options',
        description: 'Extra NODE_OPTIONS; set by the host only.',
        env_variable: 'NODE_OPTIONS',
        default_value: '--max-old-space-size=256',
        user_viewable: false,
        user_editable: false,
        rules: 'nullable|string|max:128',
      },
    ],
  });

  return result;
}

type EggInput = Omit<Egg, 'id' | 'uuid' | 'created_at' | 'updated_at'> & {
  variables: Array<Omit<EggVariable, 'id' | 'egg_id' | 'created_at' | 'updated_at'>>;
};

function addEgg(state: PanelState, input: EggInput): Egg {
  const now = ts();
  const { variables, ...rest } = input;
  const egg: Egg = { ...rest, id: state.nextId('eggs'), uuid: randomUUID(), created_at: now, updated_at: now };
  state.eggs.set(egg.id, egg);
  for (const v of variables) {
    const id = state.nextId('egg_variables');
    state.eggVariables.set(id, { ...v, id, egg_id: egg.id, created_at: now, updated_at: now });
  }
  return egg;
}

function range(a: number, b: number): number[] {
  const out: number[] = [];
  for (let i = a; i <= b; i++) out.push(i);
  return out;
}
