// A stock roslibjs 2.x client of the web_panel node, for test/test_web_panel_roslibjs.py.
//
//   node roslib_client.mjs NODE_MODULES WS_URL TIMEOUT_S PROBE_TASK_ID
//
// NODE_MODULES holds the npm package roslib (`make test` installs it into
// .venv/node/node_modules). Three connections, each a ROSLIB.Ros, subscribe to the
// belief the ways a page may name it: "both" as /capability_belief and as
// capability_belief (the spelling docs/nodes.md uses), "plain" as capability_belief
// only, "slashed" as /capability_belief only. Once every subscription has had a belief,
// "both" publishes a correction for the task PROBE_TASK_ID on robot/correction, waits
// for the executor's verdict on robot/correction_status and calls task_manager/start.
//
// It prints one JSON object per line: "start" (versions), "frame" (every message a
// connection received, as the panel sent it: op, topic, service, id), "message" (what a
// ROSLIB.Topic handed its callback), "service" (the answer of the call), then "done";
// or "timeout" / "error" naming what it was waiting for, with exit code 2 / 1. Nothing
// here changes how roslibjs routes messages: "frame" only looks at them on their way in.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, url, timeoutText, probeTask] = process.argv.slice(2);
if (!modules || !url || !timeoutText || !probeTask) {
  process.stderr.write('usage: node roslib_client.mjs NODE_MODULES WS_URL TIMEOUT_S TASK_ID\n');
  process.exit(64);
}
const deadline = Date.now() + Number(timeoutText) * 1000;

function say(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

function fail(event, what) {
  say(event, { what });
  process.exit(event === 'timeout' ? 2 : 1);
}

process.on('unhandledRejection', (error) => fail('error', String(error?.stack ?? error)));

// roslib 2.x is an ES module only: import its entry point from where npm put it.
const manifest = JSON.parse(readFileSync(join(modules, 'roslib', 'package.json'), 'utf8'));
const entry = manifest.exports?.['.']?.import ?? manifest.main;
const ROSLIB = await import(pathToFileURL(join(modules, 'roslib', entry)).href);
say('start', {
  roslib: manifest.version,
  node: process.version,
  websocket: typeof WebSocket === 'function' ? 'built-in' : 'ws package',
});

async function waitFor(what, ready) {
  while (!ready()) {
    if (Date.now() > deadline) fail('timeout', what);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function connect(client) {
  const ros = new ROSLIB.Ros({ url });
  const handle = ros.handleMessage.bind(ros);
  ros.handleMessage = (message) => {
    say('frame', {
      client, op: message.op, topic: message.topic, service: message.service,
      id: message.id, level: message.level,
      text: typeof message.msg === 'string' ? message.msg : undefined,
    });
    handle(message);
  };
  let state = 'connecting';
  ros.on('connection', () => { state = 'open'; });
  ros.on('error', (error) => { state = `error: ${error?.message ?? error}`; });
  ros.on('close', () => { if (state === 'open') state = 'closed'; });
  return waitFor(`the connection of ${client}`, () => {
    if (state.startsWith('error') || state === 'closed') fail('error', `${client}: ${state}`);
    return state === 'open';
  }).then(() => ros);
}

const received = new Map();   // "client topic" -> messages its ROSLIB.Topic handed over

function listen(ros, client, name, messageType) {
  const label = `${client} ${name}`;
  received.set(label, []);
  const topic = new ROSLIB.Topic({ ros, name, messageType });
  topic.subscribe((msg) => {
    received.get(label).push(msg);
    say('message', {
      client, topic: name, tasks_seen: msg.tasks_seen, capabilities: msg.capability_names?.length,
      stamp: msg.header?.stamp, task_id: msg.task_id, sender: msg.sender,
      accepted: msg.accepted, reason: msg.reason,
    });
  });
  return label;
}

const BELIEF = 'cecm_ros/msg/CapabilityBelief';
const both = await connect('both');
const plain = await connect('plain');
const slashed = await connect('slashed');
const beliefs = [
  listen(both, 'both', '/capability_belief', BELIEF),
  listen(both, 'both', 'capability_belief', BELIEF),
  listen(plain, 'plain', 'capability_belief', BELIEF),
  listen(slashed, 'slashed', '/capability_belief', BELIEF),
];
const statuses = listen(both, 'both', 'robot/correction_status', 'cecm_ros/msg/CorrectionStatus');
for (const label of beliefs) {
  await waitFor(`a belief for the subscription "${label}"`,
    () => received.get(label).length > 0);
}

const corrections = new ROSLIB.Topic({
  ros: both, name: 'robot/correction', messageType: 'cecm_ros/msg/Correction',
});
corrections.publish({ task_id: probeTask, step: 0, corrected_action: 'noop' });
await waitFor(`the executor's verdict on the correction for ${probeTask}`,
  () => received.get(statuses).some((s) => s.task_id === probeTask));

const start = new ROSLIB.Service({
  ros: both, name: 'task_manager/start', serviceType: 'cecm_ros/srv/StartTasks',
});
let answered = false;
start.callService({ num_tasks: 1 }, (values) => {
  answered = true;
  say('service', { name: 'task_manager/start', result: true, values });
}, (error) => {
  answered = true;
  say('service', { name: 'task_manager/start', result: false, values: error });
});
await waitFor('the answer of task_manager/start', () => answered);

say('done');
for (const ros of [both, plain, slashed]) ros.close();
process.exit(0);
