// The cecm_ros correction panel: a small rosbridge v2 client of the web_panel node.
//
// Everything shown comes from topics the node relays (subscribe -> publish) and from
// /web_panel/session, which the node derives (the open step, the actions that apply,
// the countdown). Answers go out as Correction messages (publish on robot/correction);
// the node returns the executor's verdict as a status message with the same id.
// On a dropped connection the page reconnects with exponential backoff and subscribes
// again; the node replays what it caches, so the page resumes where the graph is.
// In play mode (layout.play) a person plays the partner: the session's `play` part offers
// the partner's own actions, each on a key, and they go out as PartnerChoice messages
// (publish on human/choice); the node checks them and answers at once.
'use strict';

(function () {
  const query = new URLSearchParams(window.location.search);
  const token = query.get('token') || '';
  const tokenQuery = token ? '?token=' + encodeURIComponent(token) : '';
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);

  const state = {
    layout: null,
    session: null,          // the latest /web_panel/session message
    sessionAt: 0,           // performance.now() when it arrived (for the countdown)
    belief: null,
    previousBelief: null,   // the belief before the latest task, for the change
    task: null,             // the latest TaskRequest
    teamTask: '',
    teamStates: new Map(),  // step -> TeamState of the current task
    steps: new Map(),       // step -> StepResult of the current task
    robotPlan: null,
    render: null,           // the latest /web_panel/render (a state's render_data)
    reports: [],            // TaskReports in arrival order
    pending: new Map(),     // publish/call id -> what was asked
    connected: false,
    connections: 0,         // WebSocket connections opened so far (1 + reconnects)
    chosen: '',             // play mode: "task/attempt/step" of the choice just sent
  };

  // ------------------------------------------------------------------- wording
  const pretty = (name) => String(name).replace(/_/g, ' ');

  function parseAction(text) {
    if (!text || text === 'noop' || text === 'wait') return { schema: 'noop', args: [] };
    const parts = String(text).replace(/[()]/g, ' ').trim().split(/\s+/);
    return { schema: parts[0], args: parts.slice(1) };
  }

  // An action in words, from the domain's phrases (its layout): "(move robot kitchen
  // study)" with {move: "go to {the}{2}"} -> "go to the study" (short: "go to study").
  // A schema without a phrase reads as its name and arguments, the agent left out.
  function describe(text, short) {
    const { schema, args } = parseAction(text);
    if (schema === 'noop') return 'wait';
    const phrases = (state.layout && state.layout.phrases) || {};
    const phrase = phrases[schema];
    if (!phrase) return [schema, ...args.slice(1)].map(pretty).join(' ');
    return phrase.replace(/\{the\}/g, short ? '' : 'the ')
      .replace(/\{(\d+)\}/g, (_, i) => pretty(args[Number(i)] || ''));
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'style') Object.assign(node.style, value);   // CSSOM: allowed by the CSP
      else if (key === 'text') node.textContent = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) {
        node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      }
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ------------------------------------------------------------------ the bridge
  class Bridge {
    constructor(url) {
      this.url = url;
      this.ws = null;
      this.attempt = 0;
      this.topics = new Map();     // topic -> {type, handler}
      this.serviceAnswers = new Map();
      this.nextId = 1;
      this.retry = null;
    }

    id(prefix) { return prefix + ':' + (this.nextId++); }

    subscribe(topic, type, handler) {
      this.topics.set(topic, { type, handler });
      this.send({ op: 'subscribe', id: this.id('subscribe'), topic, type });
    }

    send(message) {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
      this.ws.send(JSON.stringify(message));
      return true;
    }

    connect() {
      clearTimeout(this.retry);
      setConnection('connecting', this.attempt ? 'reconnecting…' : 'connecting…');
      const ws = new WebSocket(this.url);
      this.ws = ws;
      ws.onopen = () => {
        this.attempt = 0;
        state.connections += 1;
        setConnection('connected', 'connected');
        for (const [topic, { type }] of this.topics) {
          this.send({ op: 'subscribe', id: this.id('subscribe'), topic, type });
        }
      };
      ws.onmessage = (event) => {
        let message;
        try { message = JSON.parse(event.data); } catch (error) { return; }
        this.dispatch(message);
      };
      ws.onclose = () => {
        if (this.ws !== ws) return;
        this.ws = null;
        const delay = Math.min(10000, 500 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
        this.attempt += 1;
        setConnection('offline', 'offline: reconnecting in ' + Math.ceil(delay / 1000) +
                      ' s (attempt ' + this.attempt + ')');
        this.retry = setTimeout(() => this.connect(), delay);
      };
    }

    dispatch(message) {
      if (message.op === 'publish') {
        const entry = this.topics.get(message.topic);
        if (entry) entry.handler(message.msg);
      } else if (message.op === 'status') {
        onStatus(message);
      } else if (message.op === 'service_response') {
        const done = this.serviceAnswers.get(message.id);
        this.serviceAnswers.delete(message.id);
        if (done) done(message);
      }
    }

    callService(service, args, done) {
      const id = this.id('call');
      this.serviceAnswers.set(id, done);
      if (!this.send({ op: 'call_service', id, service, args })) {
        this.serviceAnswers.delete(id);
        done({ result: false, values: 'not connected' });
      }
    }

    drop() { if (this.ws) this.ws.close(4000, 'dropped on purpose'); }
  }

  function setConnection(kind, text) {
    state.connected = kind === 'connected';
    const node = $('conn');
    node.className = 'conn ' + kind;
    node.textContent = text;
    renderIntent();
    renderPlay();
  }

  // ------------------------------------------------------------------ messages
  function onBelief(msg) {
    const current = state.belief;
    if (current && msg.tasks_seen > current.tasks_seen) state.previousBelief = current;
    else if (current && msg.tasks_seen < current.tasks_seen) state.previousBelief = null;
    state.belief = msg;
    renderBelief();
  }

  function onTeamState(msg) {
    if (msg.task_id !== state.teamTask || msg.step === 0) {
      if (msg.task_id !== state.teamTask) state.teamStates = new Map();
      state.teamTask = msg.task_id;
    }
    state.teamStates.set(msg.step, msg);
    renderHouse();
    renderGoal();
    renderPlan();
  }

  function onTask(msg) {
    if (!state.task || state.task.task_id !== msg.task_id) state.steps = new Map();
    state.task = msg;
    renderGoal();
    renderPlan();
    renderLabel();
  }

  function onStepResult(msg) {
    if (state.task && msg.task_id !== state.task.task_id) return;
    state.steps.set(msg.step, msg);
    renderPlan();
  }

  function onReport(msg) {
    const index = state.reports.findIndex((r) => r.task_id === msg.task_id);
    if (index >= 0) state.reports[index] = msg;
    else state.reports.push(msg);
    renderHistory();
    renderLabel();
    renderIntent();
  }

  function onSession(msg) {
    state.session = msg;
    state.sessionAt = performance.now();
    renderPlay();
    renderIntent();
    renderPlan();
    renderLabel();
    if (state.layout && state.layout.renderer === 'kitchen') renderHouse();   // next action
  }

  function onRender(msg) {
    state.render = msg;
    if (state.layout && state.layout.renderer === 'kitchen') renderHouse();
  }

  function onStatus(message) {
    const asked = message.id !== undefined ? state.pending.get(message.id) : undefined;
    if (asked) {
      // Kept until the next answer: the next step may open before it is read.
      state.pending.delete(message.id);
      const step = 'Step ' + asked.step + ': ';
      if (asked.choice && message.level === 'error') {
        state.chosen = '';   // refused: the step may be chosen again
        feedback('Your action was not taken: ' + message.msg, 'error');
        renderPlay();
      } else if (asked.choice) {
        feedback(step + 'your action went to the world: ' + asked.what + '.', 'ok');
      } else if (message.level === 'info') feedback('Accepted: ' + step + asked.what + '.', 'ok');
      else if (message.level === 'error') feedback('Refused: ' + step + message.msg, 'error');
      else feedback(step + message.msg, 'warn');
      return;
    }
    if (message.level === 'error' || message.level === 'warning') {
      feedback('Panel: ' + message.msg, message.level === 'error' ? 'error' : 'warn');
    }
  }

  function feedback(text, kind) {
    const node = $('feedback');
    node.textContent = text;
    node.className = 'feedback' + (kind ? ' ' + kind : '');
  }

  // ------------------------------------------------------------------ answering
  function openStep() {
    return state.session ? state.session.open : null;
  }

  function remaining() {
    const open = openStep();
    if (!open || open.remaining_s === null || open.remaining_s === undefined) return null;
    return open.remaining_s - (performance.now() - state.sessionAt) / 1000;
  }

  function canAnswer() {
    const open = openStep();
    if (!open || !state.connected || open.answer || open.window_closed) return false;
    const left = remaining();
    return left === null || left > 0;
  }

  function send(step, action, what) {
    const open = openStep();
    const taskId = open ? open.task_id : (state.task ? state.task.task_id : '');
    const id = bridge.id('correction');
    const message = {
      op: 'publish', id, topic: state.layout.topics.correction,
      msg: { task_id: taskId, attempt: open ? open.attempt : 0, step,
        intended_action: open && open.step === step ? open.intended_action : '',
        corrected_action: action },
    };
    if (!bridge.send(message)) {
      feedback('Not sent: the panel is not connected.', 'error');
      return null;
    }
    state.pending.set(id, { what, step });
    feedback('Sent: step ' + step + ', ' + what + '; waiting for the robot…', '');
    return id;
  }

  function answer(action, what) {
    const open = openStep();
    if (!canAnswer()) return;
    send(open.step, action, what);
  }

  function agree() {
    const open = openStep();
    if (open) answer(open.intended_action, 'agreed: ' + describe(open.intended_action));
  }

  // ------------------------------------------------------------------ play mode
  function playOn() { return Boolean(state.layout && state.layout.play); }
  function playStep() { return (state.session && state.session.play) || null; }

  // The robot's intent of the step the partner acts at, while it may still be answered.
  function intentToAgree(play) {
    const open = openStep();
    if (!open || !play || open.task_id !== play.task_id || open.step !== play.step) return null;
    return canAnswer() ? open : null;
  }

  function canChoose() {
    const play = playStep();
    if (!play || play.step === null || play.chosen || !state.connected) return false;
    return state.chosen !== play.task_id + '/' + play.attempt + '/' + play.step;
  }

  // The person's own action for the open step; when the robot's intent of that step is
  // open and unanswered, this agrees to it too (one key per step).
  function choose(action) {
    const play = playStep();
    if (!canChoose()) return;
    const id = bridge.id('choice');
    const words = action === 'noop' ? 'you wait' : 'you ' + describe(action);
    const message = { op: 'publish', id, topic: state.layout.topics.choice,
      msg: { task_id: play.task_id, attempt: play.attempt, step: play.step, action } };
    if (!bridge.send(message)) {
      feedback('Not sent: the panel is not connected.', 'error');
      return;
    }
    state.chosen = play.task_id + '/' + play.attempt + '/' + play.step;
    state.pending.set(id, { what: words, step: play.step, choice: true });
    const open = intentToAgree(play);
    if (open) {
      send(open.step, open.intended_action, words + ', and agreed: the robot will ' +
        describe(open.intended_action));
    } else {
      feedback('Sent: step ' + play.step + ', ' + words + '.', '');
    }
    renderPlay();
  }

  function outcomeWords(row, who) {
    const action = who === 'you' ? row.human_action : row.robot_action;
    const outcome = who === 'you' ? row.human : row.robot;
    const reason = who === 'you' ? row.human_reason : row.robot_reason;
    const subject = who === 'you' ? 'you' : 'the robot';
    if (outcome === 'waited' || action === 'noop') return subject + ' waited';
    if (outcome === 'failed') return subject + ' could not: ' + describe(action) + ' (' + reason + ')';
    if (outcome === 'unknown') return subject + ': ' + describe(action) + '?';
    return subject + ': ' + describe(action);
  }

  function renderPlay() {
    const card = $('play-card');
    if (!card || !playOn()) return;
    const play = playStep();
    const body = $('play-body');
    const list = $('your-actions');
    body.replaceChildren();
    list.replaceChildren();
    const choosable = canChoose();
    if (!play || play.step === null) {
      body.dataset.step = '';
      body.append(el('p', { class: 'muted', text: play && play.problem ?
        'No step is open for you: ' + play.problem + '.' : 'Waiting for the world…' }));
    } else {
      body.dataset.step = String(play.step);
      body.dataset.task = play.task_id;
      if (play.chosen) {
        body.append(el('div', { class: 'step', text: 'Step ' + play.step }));
        body.append(el('div', { class: 'action chosen', id: 'you-chose',
          'data-action': play.chosen.action }, 'You chose: ' + (play.chosen.action === 'noop'
          ? 'wait' : describe(play.chosen.action))));
        body.append(el('p', { class: 'muted', text: 'Waiting for the robot and the world…' }));
      } else {
        body.append(el('div', { class: 'step', text: 'Step ' + play.step + ' · what do you do?' }));
      }
    }
    const agrees = $('play-agrees');
    const open = openStep();
    const toAgree = play && !play.chosen ? intentToAgree(play) : null;
    if (toAgree) {
      agrees.textContent = 'Your key also agrees to the robot\'s step: it will ' +
        describe(toAgree.intended_action) + ' (answer it below first to do otherwise).';
    } else if (play && play.step !== null && !play.chosen && (!open || open.step !== play.step)) {
      agrees.textContent = 'The robot has not announced this step yet.';
    } else {
      agrees.textContent = '';
    }
    for (const { action, key } of (play && play.step !== null ? play.actions : [])) {
      const words = action === 'noop' ? 'wait' : describe(action, true);
      list.append(el('button', {
        type: 'button', disabled: !choosable, 'data-action': action, 'data-key': key,
        'aria-keyshortcuts': key ? key.toUpperCase() : null, title: action,
        onclick: () => choose(action),
      }, el('span', { class: 'label' }, key ? el('kbd', { text: key.toUpperCase() }) : null, ' ',
        words), el('code', { text: action })));
    }
    if (play && play.step !== null && play.problem) {
      list.append(el('p', { class: 'none', text: play.problem }));
    }
    const history = $('play-history');
    history.replaceChildren();
    for (const row of (play ? play.history : []).slice().reverse()) {
      const failed = row.human === 'failed';
      history.append(el('li', { class: 'happened' + (failed ? ' failed' : ''),
        'data-step': row.step, 'data-human': row.human, 'data-robot': row.robot,
        value: row.step },
      el('span', { class: 'you' + (failed ? ' failed' : '') }, outcomeWords(row, 'you')), ' ',
      el('span', { class: 'robot' + (row.robot === 'failed' ? ' failed' : '') },
        outcomeWords(row, 'robot'))));
    }
    if (!history.children.length) {
      history.append(el('li', { class: 'muted none', text: 'Nothing yet in this task.' }));
    }
  }

  function wait() { answer('noop', 'the robot waits this step'); }

  function alternatives() {
    const open = openStep();
    if (!open) return [];
    return open.actions.filter((a) => a !== 'noop' && a !== open.intended_action);
  }

  // -------------------------------------------------------------------- intent
  // The control that matches the partner's own plan gets a "your plan" mark.
  function suggest(button, yes) {
    button.classList.toggle('suggested', Boolean(yes));
    const old = button.querySelector('.your-plan');
    if (old) old.remove();
    if (yes) button.append(el('span', { class: 'your-plan', text: 'your plan' }));
  }

  function renderIntent() {
    const body = $('intent-body');
    if (!body) return;
    const open = openStep();
    const answerable = canAnswer();
    $('agree').disabled = !answerable;
    $('wait').disabled = !answerable;
    // In play mode the person is the partner: the simulated plan is no plan of theirs.
    const expects = open && !open.answer && !playOn() ? open.partner_plan_expects : null;
    suggest($('agree'), expects && expects === open.intended_action);
    suggest($('wait'), expects === 'noop' && open.intended_action !== 'noop');
    body.replaceChildren();
    const list = $('alternatives');
    list.replaceChildren();
    if (!open) {
      body.dataset.step = '';
      body.append(el('p', { class: 'muted', text: state.connected ?
        'No step is waiting for you.' : 'Not connected to the robot.' }));
      const done = sessionFinished();
      if (done) body.append(el('p', { class: 'banner', text: 'Session finished: ' +
        done.count + ' tasks. Start another from the top bar when the task manager runs.' }));
      $('start-session').hidden = !(done && state.layout && state.layout.services &&
        ('/task_manager/start' in state.layout.services));
      tick();
      return;
    }
    $('start-session').hidden = true;
    body.dataset.step = String(open.step);
    body.dataset.task = open.task_id;
    body.append(el('div', { class: 'step', text: 'Step ' + open.step + ' · the robot intends to' }));
    body.append(el('div', { class: 'action', id: 'intended', 'data-action': open.intended_action },
      describe(open.intended_action)));
    body.append(el('code', { text: open.intended_action }));
    if (open.answer) {
      const how = open.answer.agreed ? 'agreed' : (open.answer.corrected_action === 'noop' ?
        'wait' : describe(open.answer.corrected_action));
      body.append(el('p', { class: 'answered', id: 'answered' },
        'Answered by ' + open.answer.sender + ': ' + how + '. The robot acts now.'));
    } else if (expects) {
      body.append(el('p', { class: 'hint' }, 'Your (simulated) plan has the robot ' +
        describe(expects) + ' here.'));
    }
    const options = alternatives();
    const shift = playOn();   // play mode: the digits choose your own action
    options.forEach((action, index) => {
      const key = index < 9 ? String(index + 1) : null;
      const button = el('button', {
        type: 'button', disabled: !answerable, 'data-action': action,
        'aria-keyshortcuts': key && shift ? 'Shift+' + key : key, title: action,
        onclick: () => answer(action, 'do ' + describe(action) + ' instead'),
      }, el('span', { class: 'label' }, key ? el('kbd', { text: (shift ? '⇧' : '') + key }) : null,
        ' ', describe(action, true)), el('code', { text: action }));
      suggest(button, expects === action);
      list.append(button);
    });
    if (!options.length) {
      list.append(el('p', { class: 'none', text: open.actions_problem ||
        'No other robot action applies in this state.' }));
    }
    tick();
  }

  function tick() {
    if (playOn()) {
      const agrees = $('play-agrees');
      const play = playStep();
      if (agrees && agrees.textContent.startsWith('Your key') && !intentToAgree(play)) renderPlay();
    }
    const open = openStep();
    const fill = $('countdown-fill');
    const text = $('countdown-text');
    const window_s = state.session ? state.session.correction_window_s : null;
    const left = remaining();
    if (!open || open.answer) {
      fill.style.width = '0';
      text.textContent = open && open.answer ? '' : '';
      return;
    }
    if (open.window_closed) {
      fill.style.width = '0';
      text.textContent = 'This step\'s correction window has closed: the robot acts on ' +
        'what it announced, or on the answer it got.';
      return;
    }
    if (left === null || (!window_s && left > 0)) {
      fill.style.width = '100%';
      text.textContent = 'Answer before the robot\'s correction window closes.';
      return;
    }
    const clamped = Math.max(0, left);
    fill.style.width = window_s ? (100 * clamped / window_s).toFixed(1) + '%' : '0';
    fill.className = clamped < Math.min(5, window_s / 4) ? 'low' : '';
    if (clamped > 0) {
      text.textContent = Math.ceil(clamped) + ' s left to answer; silence means the robot ' +
        'goes ahead.';
    } else {
      text.textContent = 'Time is up: the robot goes ahead as announced.';
      if (!$('agree').disabled) renderIntent();
    }
  }

  // --------------------------------------------------------------------- house
  function latestState() {
    if (!state.teamStates.size) return null;
    return state.teamStates.get(Math.max(...state.teamStates.keys()));
  }

  function facts(teamState) {
    const found = { at: {}, item: {}, holding: {}, dirty: new Set() };
    if (!teamState) return found;
    for (const prop of teamState.true_propositions) {
      const { schema, args } = parseAction(prop);
      if (schema === 'agent-at') found.at[args[0]] = args[1];
      else if (schema === 'item-at') found.item[args[0]] = args[1];
      else if (schema === 'holding') found.holding[args[0]] = args[1];
      else if (schema === 'dirty') found.dirty.add(args[0]);
    }
    return found;
  }

  function goals() {
    const wanted = {};
    if (!state.task) return wanted;
    for (const prop of state.task.goal_propositions) {
      const { schema, args } = parseAction(prop);
      const item = args[0];
      wanted[item] = wanted[item] || { room: null, clean: false, props: [] };
      if (schema === 'item-at') wanted[item].room = args[1];
      if (schema === 'clean') wanted[item].clean = true;
      wanted[item].props.push(prop);
    }
    return wanted;
  }

  // Any domain: the latest state's facts by predicate (goal facts marked) or its
  // numbers, beside the plan lanes, the belief and the history.
  function renderFacts() {
    const layout = state.layout;
    const list = $('facts');
    $('house').style.display = 'none';   // (an SVG element has no `hidden`)
    list.hidden = false;
    $('house-title').textContent = 'The ' + pretty(layout.domain || 'world');
    const latest = latestState();
    const goal = new Set(state.task ? state.task.goal_propositions : []);
    list.replaceChildren();
    const byPredicate = new Map();
    for (const prop of (latest ? latest.true_propositions : [])) {
      const { schema, args } = parseAction(prop);
      if (!byPredicate.has(schema)) byPredicate.set(schema, []);
      byPredicate.get(schema).push({ prop, args });
    }
    for (const [predicate, entries] of byPredicate) {
      const row = el('div', { class: 'fact-row', 'data-predicate': predicate },
        el('span', { class: 'predicate', text: pretty(predicate) }));
      for (const { prop, args } of entries) {
        row.append(el('span', { class: 'fact' + (goal.has(prop) ? ' goal-met' : ''),
          'data-fact': prop, text: args.map(pretty).join(' · ') + (goal.has(prop) ? ' ✓' : '') }));
      }
      list.append(row);
    }
    const features = latest ? latest.state_features || [] : [];
    if (features.length) {
      const names = layout.feature_names || [];
      const row = el('div', { class: 'fact-row' }, el('span', { class: 'predicate', text: 'state' }));
      features.forEach((value, i) => row.append(el('span', { class: 'fact',
        text: (names[i] || 'x' + i) + ' = ' + Number(value).toFixed(2) })));
      list.append(row);
    }
    $('house-desc').textContent = latest ? 'Step ' + latest.step + ': ' +
      (latest.true_propositions.length ? latest.true_propositions.length + ' facts hold'
        : features.length + ' numbers') + '; goal facts that hold are marked ✓.'
      : 'No state yet.';
  }

  // ------------------------------------------------------------------- kitchen
  // Overcooked: the kitchen's grid from the layout, and per state the domain's own
  // render_data (web_panel/render), since its state is numbers: who stands where, each
  // object's counter, holder or plate, every vegetable's chops, the recipe; beside it
  // the robot's next macro action (the open intent, or the answer that replaced it).
  const VEGETABLE_LETTERS = { lettuce: 'L', onion: 'O', tomato: 'T' };

  function kitchenRender() {
    const render = state.render;
    if (!render || render.task_id !== state.teamTask) return null;
    return render;
  }

  function robotNext() {
    const open = openStep();
    if (open && state.task && open.task_id === state.task.task_id) {
      return open.answer ? open.answer.corrected_action : open.intended_action;
    }
    return null;
  }

  function chopWords(chops, most) {
    if (chops === undefined) return '';
    if (chops >= most) return 'chopped';
    return chops ? 'chopped ' + chops + ' of ' + most : 'raw';
  }

  function whereWords(objects, name) {
    const entry = objects[name] || {};
    if (entry.served) return 'served';
    if (entry.held_by) return 'held by ' + (entry.held_by === 'robot' ? 'the robot' : 'you');
    if (entry.on) return 'on ' + pretty(entry.on) + (whereWords(objects, entry.on) === 'served'
      ? '' : ' (' + whereWords(objects, entry.on) + ')');
    if (entry.cell) return 'at row ' + entry.cell[0] + ', column ' + entry.cell[1];
    return 'nowhere';
  }

  function renderKitchen() {
    const layout = state.layout;
    const drawing = $('house');
    drawing.style.display = '';
    $('facts').hidden = true;
    drawing.replaceChildren();
    drawing.setAttribute('viewBox', '0 0 420 250');
    const render = kitchenRender();
    const data = render && render.data ? render.data : null;
    const names = Object.keys(layout.kitchens || {});
    const kitchenName = data ? data.kitchen : names[0];
    const kitchen = (layout.kitchens || {})[kitchenName];
    $('house-title').textContent = 'The kitchen' + (kitchenName ? ' ' + kitchenName : '');
    if (!kitchen) {
      $('house-desc').textContent = 'No kitchen to draw.';
      return;
    }
    const most = layout.chops || 3;
    const size = Math.floor(242 / Math.max(kitchen.width, kitchen.height));
    const x0 = 4;
    const y0 = 4;
    const centre = (cell) => ({ x: x0 + cell[1] * size + size / 2,
                                y: y0 + cell[0] * size + size / 2 });
    let delivery = null;
    kitchen.rows.forEach((row, r) => row.forEach((kind, c) => {
      const x = x0 + c * size;
      const y = y0 + r * size;
      const group = svg('g', { 'data-cell': r + ',' + c, 'data-kind': kind });
      group.append(svg('rect', { class: 'cell ' + kind.replace(/_\d+$/, ''), x, y,
                                 width: size, height: size }));
      const label = { knife_1: 'K1', knife_2: 'K2', delivery: 'OUT' }[kind];
      if (label) {
        group.append(svg('text', { class: 'cell-label', x: x + 2, y: y + 9 }, label));
        group.append(svg('title', {}, kind === 'delivery' ? 'delivery counter' :
          'chopping board ' + kind.slice(-1)));
      }
      if (kind === 'delivery') delivery = [r, c];
      drawing.append(group);
    }));
    const objects = data ? data.objects : {};
    // Where an object is drawn: its counter, its holder's cell (a corner of it), its
    // plate's place (beside the other vegetables there), or the delivery counter.
    const place = (name, depth) => {
      const entry = objects[name] || {};
      if (entry.cell) return { ...centre(entry.cell), small: false, held: false };
      if (entry.held_by && data.agents[entry.held_by]) {
        const at = centre(data.agents[entry.held_by]);
        return { x: at.x + size * 0.24, y: at.y + size * 0.24, small: true, held: true };
      }
      if (entry.on && depth < 2) {
        const plate = place(entry.on, depth + 1);
        const mates = Object.keys(objects).filter((n) => objects[n].on === entry.on);
        const offsets = [[-0.13, -0.1], [0.13, -0.1], [0, 0.13]];
        const [dx, dy] = offsets[mates.indexOf(name) % 3];
        const scale = plate.small ? 0.6 : 1;
        return { x: plate.x + dx * size * scale, y: plate.y + dy * size * scale, small: true,
                 held: plate.held };
      }
      if (entry.served && delivery) return { ...centre(delivery), small: true, held: false };
      return null;
    };
    const drawObject = (name) => {
      const entry = objects[name];
      const at = place(name, 0);
      if (!at) return;
      const vegetable = entry.chops !== undefined;
      const classes = ['object', vegetable ? 'vegetable ' + name : 'plate'];
      if (vegetable && entry.chops >= most) classes.push('chopped');
      if (entry.served) classes.push('served');
      const group = svg('g', { class: classes.join(' '), 'data-object': name,
        'data-place': entry.cell ? 'cell' : entry.held_by ? 'held' : entry.on ? 'plate' : 'served' });
      if (vegetable) {
        group.setAttribute('data-chops', String(entry.chops));
        const radius = at.small ? size * 0.13 : size * 0.24;
        group.append(svg('circle', { cx: at.x, cy: at.y, r: radius }));
        group.append(svg('text', { class: 'letter', x: at.x, y: at.y + radius * 0.42,
          'text-anchor': 'middle', 'font-size': radius * 1.25 }, VEGETABLE_LETTERS[name] ||
          name[0].toUpperCase()));
        if (!at.small) {
          for (let i = 0; i < most; i += 1) {
            group.append(svg('rect', { class: 'chop' + (i < entry.chops ? ' done' : ''),
              x: at.x - (most * 5) / 2 + i * 5 + 0.5, y: at.y + radius + 1.5, width: 4,
              height: 3 }));
          }
        }
        group.append(svg('title', {}, name + ': ' + chopWords(entry.chops, most) + ', ' +
          whereWords(objects, name)));
      } else {
        const radius = at.small ? size * 0.26 : size * 0.36;
        group.append(svg('circle', { cx: at.x, cy: at.y, r: radius }));
        group.append(svg('text', { class: 'plate-number', x: at.x + radius * 0.7,
          y: at.y + radius, 'text-anchor': 'middle' }, name.slice(-1)));
        group.append(svg('title', {}, pretty(name) + ', ' + whereWords(objects, name)));
      }
      drawing.append(group);
    };
    const plates = Object.keys(objects).filter((n) => objects[n].chops === undefined);
    const vegetables = Object.keys(objects).filter((n) => objects[n].chops !== undefined);
    const lying = (n) => { const at = place(n, 0); return at && !at.held; };
    for (const name of [...plates, ...vegetables]) if (lying(name)) drawObject(name);
    for (const agent of ['robot', 'partner']) {
      if (!data || !data.agents[agent]) continue;
      const at = centre(data.agents[agent]);
      const group = svg('g', { class: 'agent ' + (agent === 'robot' ? 'robot' : 'human'),
                               'data-agent': agent });
      const half = size * 0.3;
      if (agent === 'robot') {
        group.append(svg('rect', { x: at.x - half, y: at.y - half, width: 2 * half,
                                   height: 2 * half, rx: 3 }));
      } else {
        group.append(svg('circle', { cx: at.x, cy: at.y, r: half }));
      }
      group.append(svg('text', { x: at.x, y: at.y + 4, 'text-anchor': 'middle' },
        agent === 'robot' ? 'R' : 'H'));
      group.append(svg('title', {}, agent === 'robot' ? 'the robot' : 'you (the partner)'));
      drawing.append(group);
    }
    for (const name of [...plates, ...vegetables]) if (!lying(name)) drawObject(name);

    // Beside the grid: the recipe and what it still needs, the hands, the next action.
    const side = svg('g', { class: 'kitchen-side' });
    let line = 16;
    const write = (text, attrs) => {
      side.append(svg('text', { x: 252, y: line, ...attrs }, text));
      line += 14;
    };
    if (!data) {
      write(render && render.error ? 'Cannot draw this state:' : 'No state yet.',
            { class: 'side-title' });
      if (render && render.error) write(render.error.slice(0, 40), { class: 'side-note' });
    } else {
      write('Recipe: ' + pretty(data.recipe), { class: 'recipe', 'data-recipe': data.recipe });
      for (const name of data.needs) {
        const entry = objects[name] || {};
        const ready = entry.chops >= most;
        write((ready ? '✓ ' : '· ') + name + ': ' + chopWords(entry.chops, most) +
          (entry.on ? ', on ' + pretty(entry.on) : entry.served ? ', served' : ''),
          { class: 'need' + (ready ? ' ready' : ''), 'data-vegetable': name });
      }
      line += 4;
      for (const agent of ['robot', 'partner']) {
        const held = Object.keys(objects).filter((n) => objects[n].held_by === agent);
        const onIt = held.length ? Object.keys(objects).filter((n) => objects[n].on === held[0])
          : [];
        write((agent === 'robot' ? 'Robot holds: ' : 'You hold: ') +
          (held.length ? pretty(held[0]) + (onIt.length ? ' (' + onIt.join(', ') + ')' : '')
            : 'nothing'), { class: 'hands', 'data-hands': agent });
      }
      line += 4;
      const next = robotNext();
      write('Robot next: ' + (next ? describe(next) : '—'),
            { class: 'next-action', 'data-action': next || '' });
      if (data.served) {
        line += 6;
        write('Served ✓', { class: 'served-banner' });
      }
    }
    drawing.append(side);
    if (!data) {
      $('house-desc').textContent = 'No state of this task yet.';
      return;
    }
    const agentWords = (agent) => {
      const cell = data.agents[agent];
      const held = Object.keys(objects).filter((n) => objects[n].held_by === agent);
      return (agent === 'robot' ? 'Robot (R)' : 'you (H)') + ' at row ' + cell[0] +
        ', column ' + cell[1] + (held.length ? ', holding ' + pretty(held[0]) : ', hands free');
    };
    $('house-desc').textContent = 'Kitchen ' + data.kitchen + ', step ' + render.step + ': ' +
      agentWords('robot') + '; ' + agentWords('partner') + '. ' + pretty(data.recipe) +
      ' needs ' + data.needs.map((n) => n + ' (' + chopWords((objects[n] || {}).chops, most) +
      ')').join(', ') + (data.served ? '; served.' : '.') + ' K1, K2: chopping boards; OUT: ' +
      'delivery. Pips under a vegetable count its chops.';
  }

  function renderHouse() {
    const layout = state.layout;
    const drawing = $('house');
    if (!layout || !drawing) return;
    if (layout.renderer === 'kitchen') { renderKitchen(); return; }
    if (layout.renderer !== 'household') { renderFacts(); return; }
    drawing.style.display = '';
    drawing.setAttribute('viewBox', '0 0 420 250');
    $('facts').hidden = true;
    drawing.replaceChildren();
    const rooms = layout.rooms;
    const cols = rooms.length <= 4 ? 2 : 3;
    const rows = Math.ceil(rooms.length / cols);
    const gap = 16;
    const width = (420 - 8 - gap * (cols - 1)) / cols;
    const height = (250 - 8 - gap * (rows - 1)) / rows;
    const box = {};
    rooms.forEach((room, i) => {
      const x = 4 + (i % cols) * (width + gap);
      const y = 4 + Math.floor(i / cols) * (height + gap);
      box[room] = { x, y, cx: x + width / 2, cy: y + height / 2 };
    });
    const doors = layout.doors || [];
    for (const [a, b] of doors) {
      drawing.append(svg('line', { class: 'door', x1: box[a].cx, y1: box[a].cy,
                                   x2: box[b].cx, y2: box[b].cy }));
    }
    const now = facts(latestState());
    const wanted = goals();
    const sinks = new Set(layout.sinks);
    for (const room of rooms) {
      const { x, y } = box[room];
      const group = svg('g', { 'data-room': room });
      group.append(svg('rect', { class: 'room', x, y, width, height, rx: 8 }));
      group.append(svg('text', { class: 'room-name', x: x + 6, y: y + 14 }, pretty(room)));
      if (sinks.has(room)) {
        group.append(svg('rect', { class: 'sink', x: x + width - 30, y: y + 4, width: 26,
                                   height: 12, rx: 3 }));
        group.append(svg('text', { class: 'sink-text', x: x + width - 26, y: y + 13 }, 'sink'));
      }
      let line = y + 20;
      for (const agent of ['robot', 'human']) {
        if (now.at[agent] !== room) continue;
        const g = svg('g', { class: 'agent ' + agent, 'data-agent': agent });
        if (agent === 'robot') g.append(svg('rect', { x: x + 6, y: line, width: 16, height: 16, rx: 3 }));
        else g.append(svg('circle', { cx: x + 14, cy: line + 8, r: 8 }));
        g.append(svg('text', { x: x + 10.5, y: line + 12 }, agent === 'robot' ? 'R' : 'H'));
        const held = now.holding[agent];
        g.append(svg('text', { class: 'holding', x: x + 26, y: line + 12 },
          (agent === 'robot' ? 'robot' : 'you') + (held ? ' · holds ' + held +
            (now.dirty.has(held) ? ' (dirty)' : '') : '')));
        group.append(g);
        line += 19;
      }
      const items = layout.items.map((i) => i.name).filter((name) => now.item[name] === room);
      const chipWidth = (width - 16) / 2;
      items.forEach((name, i) => {
        const cx = x + 6 + (i % 2) * (chipWidth + 4);
        const cy = line + 3 + Math.floor(i / 2) * 18;
        const dirty = now.dirty.has(name);
        const g = svg('g', { class: 'item ' + (dirty ? 'dirty' : 'clean'), 'data-item': name });
        g.append(svg('rect', { x: cx, y: cy, width: chipWidth, height: 15, rx: 4 }));
        g.append(svg('text', { x: cx + 4, y: cy + 11 }, name));
        g.append(svg('title', {}, name + (dirty ? ' (dirty)' : ' (clean)')));
        group.append(g);
      });
      const due = Object.entries(wanted).filter(([, goal]) => goal.room === room)
        .map(([item, goal]) => item + (now.item[item] === room &&
          !(goal.clean && now.dirty.has(item)) ? ' ✓' : ''));
      if (due.length) {
        let text = 'goal: ' + due.join(', ');
        if (text.length > 30) text = text.slice(0, 29) + '…';
        group.append(svg('text', { class: 'goal-text', x: x + 6, y: y + height - 6 }, text));
      }
      drawing.append(group);
    }
    const where = (agent) => now.at[agent] ? 'in the ' + pretty(now.at[agent]) +
      (now.holding[agent] ? ', holding the ' + now.holding[agent] : ', hands free') : 'not seen yet';
    $('house-desc').textContent = 'Robot (R) ' + where('robot') + '; you (H) ' + where('human') +
      '. ' + (layout.doors ? 'Doors: ' + layout.doors.map(([a, b]) => pretty(a) + '–' +
      pretty(b)).join(', ') + '.' : 'Every room opens onto every other.') +
      ' Green items are clean, dashed brown ones dirty.';
  }

  // ----------------------------------------------------------------- goal, plan
  function renderGoal() {
    const node = $('goal');
    if (!state.task) { node.textContent = 'No task yet.'; return; }
    if (state.layout && state.layout.renderer !== 'household') {
      const latest = state.teamTask === state.task.task_id ? latestState() : null;
      const holds = new Set(latest ? latest.true_propositions : []);
      node.replaceChildren(el('strong', { text: 'Goal: ' }));
      for (const prop of state.task.goal_propositions) {
        const { schema, args } = parseAction(prop);
        node.append(el('span', { class: 'g' + (holds.has(prop) ? ' done' : ''), 'data-fact': prop },
          [schema, ...args].map(pretty).join(' ') + (holds.has(prop) ? ' ✓' : '')));
      }
      return;
    }
    const now = facts(state.task && state.teamTask === state.task.task_id ? latestState() : null);
    node.replaceChildren(el('strong', { text: 'Goal: ' }));
    for (const [item, goal] of Object.entries(goals())) {
      const placed = !goal.room || now.item[item] === goal.room;
      const washed = !goal.clean || !now.dirty.has(item);
      const done = placed && washed && state.teamTask === state.task.task_id;
      node.append(el('span', { class: 'g' + (done ? ' done' : ''), 'data-item': item },
        item + (goal.room ? ' → ' + pretty(goal.room) : '') + (goal.clean ? ', clean' : '') +
        (done ? ' ✓' : '')));
    }
  }

  function renderPlan() {
    const body = document.querySelector('#plan tbody');
    if (!body) return;
    body.replaceChildren();
    const task = state.task ? state.task.task_id : '';
    const session = state.session;
    const plan = state.robotPlan && state.robotPlan.task_id === task ? state.robotPlan : null;
    const offset = plan && session && session.task_id === task ? session.plan_offset : 0;
    const open = openStep();
    const current = open && open.task_id === task ? open.step :
      (session && session.task_id === task && session.step !== null ? session.step : null);
    const rows = [];
    const actual = (t) => {
      const result = state.steps.get(t);
      const after = state.teamStates.get(t + 1);
      if (!result) return null;
      return { robot: result.action, human: after ? after.human_action : '?',
               corrected: result.corrected };
    };
    for (let t = 0; t < offset; t += 1) {
      const done = actual(t);
      rows.push({ t, robot: done ? done.robot : '?', human: done ? done.human : '?',
                  corrected: done && done.corrected });
    }
    if (plan) {
      plan.steps.forEach((step, i) => {
        const t = offset + i;
        const done = current !== null && t < current ? actual(t) : null;
        rows.push(done ? { t, robot: done.robot, human: done.human, corrected: done.corrected }
          : { t, robot: step.robot_action, human: step.human_action, corrected: false });
      });
    }
    const play = playStep();
    const failedSteps = new Set(play && play.task_id === task ?
      play.history.filter((h) => h.human === 'failed').map((h) => h.step) : []);
    let currentRow = null;
    for (const row of rows) {
      const tr = el('tr', { 'data-step': row.t, class: current === null ? '' :
        (row.t < current ? 'done' : (row.t === current ? 'current' : '')) });
      tr.append(el('td', { text: String(row.t) }));
      const robotCell = el('td', { class: 'robot' + (row.robot === 'noop' ? ' idle' : ''),
        title: row.robot }, describe(row.robot, true));
      if (row.corrected) robotCell.append(el('span', { class: 'tag', text: 'corrected' }));
      tr.append(robotCell);
      const humanCell = el('td', { class: 'human' + (row.human === 'noop' || !row.human ? ' idle' : ''),
        title: row.human }, row.human ? describe(row.human, true) : '—');
      if (failedSteps.has(row.t) && current !== null && row.t < current) {
        humanCell.append(el('span', { class: 'tag', text: 'could not' }));
      }
      tr.append(humanCell);
      body.append(tr);
      if (row.t === current) currentRow = tr;
    }
    if (!rows.length) {
      body.append(el('tr', {}, el('td', { colspan: 3, class: 'idle',
        text: 'No plan for this task yet.' })));
    }
    const summary = $('plan-summary');
    if (plan) {
      const remainingSteps = plan.steps.filter((s, i) => current === null || offset + i >= current);
      const mine = remainingSteps.filter((s) => s.robot_action !== 'noop').length;
      const yours = remainingSteps.filter((s) => s.human_action !== 'noop').length;
      summary.textContent = 'Plan from step ' + offset + ' (' + plan.planned_for +
        '): still to do, robot ' + mine + ' action' + (mine === 1 ? '' : 's') + ', partner ' +
        yours + '.';
    } else {
      summary.textContent = '';
    }
    if (currentRow) {
      const box = currentRow.closest('.plan-scroll');
      const top = currentRow.offsetTop - box.clientHeight / 3;
      box.scrollTop = Math.max(0, top);
    }
  }

  // -------------------------------------------------------------------- belief
  // What a bar says in words: only known_* reads as a fact; a guess ends in '?'.
  const VERDICTS = {
    known_present: () => 'can (known)',
    known_absent: () => "can't (known)",
    undecided: (has) => (has ? 'can?' : "can't?") + ' undecided',
    never_exercised: (has) => (has ? 'can?' : "can't?") + ' untested',
    inert: () => 'inert here',
    unreported: (has) => 'est.: ' + (has ? 'can' : "can't"),
  };

  function renderBelief() {
    const belief = state.belief;
    const list = $('bars');
    if (!belief || !list) return;
    const layout = state.layout;
    const descriptions = {};
    if (layout) for (const c of layout.capabilities) descriptions[c.name] = c.description;
    const previous = state.previousBelief && state.previousBelief.capability_names.join() ===
      belief.capability_names.join() ? state.previousBelief : null;
    list.replaceChildren();
    belief.capability_names.forEach((name, i) => {
      const theta = belief.theta[i];
      const has = belief.estimate[i];
      const status = belief.status.length ? belief.status[i] : 'unreported';
      const confounded = belief.confounded_with.length ? belief.confounded_with[i] : '';
      const percent = Math.round(100 * theta);
      const verdict = (VERDICTS[status] || VERDICTS.unreported)(has);
      let why = (descriptions[name] || name) + ': P = ' + theta.toFixed(2) + '; ' + verdict;
      if (status === 'undecided') {
        why += ' (the evidence allows both' + (confounded ? '; confounded with ' +
          confounded.split(',').join(', ') : '') + '; the robot plans as if you ' +
          (has ? 'can' : 'cannot') + ')';
      }
      const track = el('div', { class: 'bar-track', role: 'meter', 'aria-valuemin': 0,
        'aria-valuemax': 1, 'aria-valuenow': theta, 'aria-label': why });
      track.append(el('div', { class: 'bar-fill ' + status, style: { width: percent + '%' } }));
      let delta = null;
      if (previous) {
        const before = previous.theta[i];
        track.append(el('div', { class: 'bar-prev',
          style: { left: 'calc(' + (100 * before).toFixed(1) + '% - 1px)' } }));
        const change = theta - before;
        if (Math.abs(change) >= 0.005) {
          delta = el('span', { class: 'delta ' + (change > 0 ? 'up' : 'down') },
            (change > 0 ? '+' : '−') + Math.abs(change).toFixed(2));
        }
      }
      track.append(el('span', { class: 'bar-val' }, theta.toFixed(2), delta));
      list.append(el('li', {
        class: 'bar-row', title: why, 'data-name': name, 'data-theta': String(theta),
        'data-status': status, 'data-estimate': String(has),
      }, el('span', { class: 'name', text: name }), track,
      el('span', { class: 'verdict ' + status, text: verdict })));
    });
    const decided = belief.status.filter((s) => s === 'known_present' || s === 'known_absent')
      .length;
    const method = belief.method + (belief.inference ? ' (' + belief.inference + ')' : '');
    const parts = [method, 'after ' + belief.tasks_seen + ' task' +
      (belief.tasks_seen === 1 ? '' : 's'), belief.accepted_samples + ' accepted samples',
      belief.hypotheses + ' hypotheses left'];
    parts.push(belief.status.length ? decided + ' of ' + belief.capability_names.length +
      ' decided by the evidence' : 'this method does not say what the evidence decided');
    $('belief-summary').textContent = parts.join(' · ') + '.';
  }

  // ------------------------------------------------------------------- history
  function currentSession() {
    let group = [];
    let last = 0;
    for (const report of state.reports) {
      if (report.index <= last) group = [];
      group.push(report);
      last = report.index;
    }
    return group;
  }

  function sessionFinished() {
    const reports = currentSession();
    const last = reports[reports.length - 1];
    if (!last || last.index < last.count) return null;
    if (state.task && state.task.task_id !== last.task_id) return null;
    return last;
  }

  function chart(title, series) {
    const figure = el('figure', { class: 'chart' }, el('figcaption', { text: title }));
    const drawing = svg('svg', { viewBox: '0 0 130 78', role: 'img', 'aria-label': title });
    drawing.append(svg('line', { class: 'axis', x1: 14, y1: 8, x2: 14, y2: 62 }));
    drawing.append(svg('line', { class: 'axis', x1: 14, y1: 62, x2: 126, y2: 62 }));
    drawing.append(svg('text', { class: 'tick-label', x: 2, y: 65 }, '0'));
    drawing.append(svg('text', { class: 'tick-label', x: 2, y: 11 }, '1'));
    const count = Math.max(...series.map((s) => s.values.length), 1);
    const px = (i) => 26 + (count === 1 ? 45 : i * (90 / (count - 1)));
    const py = (v) => 62 - Math.max(0, Math.min(1, v)) * 54;
    for (let i = 0; i < count; i += 1) {
      drawing.append(svg('text', { class: 'tick-label', x: px(i), y: 75, 'text-anchor': 'middle' },
        String(i + 1)));
    }
    for (const { values, color, labels } of series) {
      const points = values.map((v, i) => [px(i), py(v)]).filter(([, y]) => !Number.isNaN(y));
      if (points.length > 1) {
        drawing.append(svg('polyline', { class: 'line', stroke: color,
          points: points.map((p) => p.join(',')).join(' ') }));
      }
      values.forEach((v, i) => {
        if (v === null || Number.isNaN(v)) return;
        drawing.append(svg('circle', { cx: px(i), cy: py(v), r: 2.6, fill: color }));
        if (labels) {
          drawing.append(svg('text', { class: 'dot-label', x: px(i), y: Math.max(9, py(v) - 4),
            'text-anchor': 'middle' }, labels[i]));
        }
      });
    }
    figure.append(drawing);
    return figure;
  }

  function renderHistory() {
    const reports = currentSession();
    const charts = $('charts');
    if (!charts) return;
    charts.replaceChildren();
    if (!reports.length) return;
    const ratio = reports.map((r) => (r.robot_decisions ? r.corrections / r.robot_decisions : 0));
    charts.append(chart('Corrections per robot decision', [{ values: ratio, color: '#cf3d3d',
      labels: reports.map((r) => r.corrections + '/' + r.robot_decisions) }]));
    charts.append(chart('Plan overlap (IoU)', [{ values: reports.map((r) => r.iou),
      color: '#2f6fdb', labels: reports.map((r) => r.iou.toFixed(2)) }]));
    charts.append(chart('Hamming distance', [
      { values: reports.map((r) => r.hamming_active), color: '#b6bfd0' },
      { values: reports.map((r) => r.hamming), color: '#1d2330',
        labels: reports.map((r) => r.hamming.toFixed(2)) }]));
    const last = reports[reports.length - 1];
    const heldout = last.heldout_agreement === null ? '' : '; held-out agreement ' +
      last.heldout_agreement.toFixed(2);
    $('history-note').textContent = reports.length + ' of ' + last.count + ' tasks done. Task ' +
      last.index + ': ' + last.corrections + ' corrections in ' + last.robot_decisions +
      ' robot decisions, ' + last.decided + ' capabilities decided' + heldout + (last.goal_reached
        ? '; goal reached.' : '; goal NOT reached.') + ' Hamming: dark all capabilities, light ' +
      'the non-inert ones.';
  }

  function renderLabel() {
    const node = $('task-label');
    if (!state.task) { node.textContent = 'Waiting for a task…'; return; }
    const reports = currentSession();
    const last = reports[reports.length - 1];
    const reported = reports.some((r) => r.task_id === state.task.task_id);
    const index = reported ? reports.find((r) => r.task_id === state.task.task_id).index :
      (last && last.index < last.count ? last.index + 1 : 1);
    const count = last ? ' of ' + last.count : '';
    const step = state.session && state.session.task_id === state.task.task_id &&
      state.session.step !== null ? ' · step ' + state.session.step : '';
    node.textContent = 'Task ' + index + count + ' · ' + state.task.task_id + step;
  }

  // ---------------------------------------------------------------- keyboard
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target;
    if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
    const key = event.key.toLowerCase();
    // The robot's other actions: 1-9, or in play mode Shift+1-9 (the digits are yours).
    let robotDigit = null;
    if (!playOn() && /^[1-9]$/.test(key)) robotDigit = Number(key);
    else if (playOn() && event.shiftKey && /^(Digit|Numpad)[1-9]$/.test(event.code)) {
      robotDigit = Number(event.code.slice(-1));
    }
    const play = playOn() ? playStep() : null;
    const mine = play && play.step !== null && !event.shiftKey ?
      play.actions.find((entry) => entry.key === key) : null;
    if (key === 'a') agree();
    else if (key === 'w') wait();
    else if (robotDigit !== null) {
      const action = alternatives()[robotDigit - 1];
      if (action) answer(action, 'do ' + describe(action) + ' instead');
    } else if (mine) choose(mine.action);
    else return;
    event.preventDefault();
  });
  $('agree').addEventListener('click', agree);
  $('wait').addEventListener('click', wait);
  $('start-session').addEventListener('click', () => {
    bridge.callService('/task_manager/start', { num_tasks: 0 }, (answer) => {
      const values = answer.values;
      if (answer.result && values.success) feedback('A new session started.', 'ok');
      else feedback('No new session: ' + (answer.result ? values.message : values), 'error');
    });
  });

  // ------------------------------------------------------------------- start
  const scheme = window.location.protocol === 'https:' ? 'wss://' : 'ws://';
  const bridge = new Bridge(scheme + window.location.host + '/ws' + tokenQuery);

  async function loadLayout(attempt) {
    try {
      const response = await fetch('api/layout' + tokenQuery, { cache: 'no-store' });
      if (response.status === 401 || response.status === 403) {
        setConnection('offline', 'access denied: open the URL with its token');
        return;
      }
      if (!response.ok) throw new Error('HTTP ' + response.status);
      state.layout = await response.json();
    } catch (error) {
      const delay = Math.min(10000, 500 * 2 ** attempt);
      setConnection('offline', 'cannot reach the panel: retrying in ' + Math.ceil(delay / 1000) +
        ' s');
      setTimeout(() => loadLayout(attempt + 1), delay);
      return;
    }
    const topics = state.layout.topics;
    const types = state.layout.types;
    const subscribe = (key, handler) => bridge.subscribe(topics[key], types[topics[key]], handler);
    subscribe('belief', onBelief);
    subscribe('team_state', onTeamState);
    subscribe('task', onTask);
    subscribe('robot_plan', (msg) => { state.robotPlan = msg; renderPlan(); });
    subscribe('step_result', onStepResult);
    subscribe('report', onReport);
    subscribe('session', onSession);
    if (topics.render) subscribe('render', onRender);
    if (playOn()) {
      document.body.classList.add('play');
      $('play-card').hidden = false;
      $('keys').hidden = true;
      $('play-keys').hidden = false;
      document.title = 'cecm_ros · play the partner';
      document.querySelector('.topbar .sub').textContent = 'you play the partner';
      renderPlay();
    }
    renderHouse();
    bridge.connect();
  }

  setInterval(tick, 250);
  loadLayout(0);

  // For scripts and tests: the page's own connection, used exactly as the buttons use it.
  window.cecmPanel = {
    state,
    correct: (step, action) => send(step, action, 'sent by script'),
    choose: (action) => choose(action),
    dropConnection: () => bridge.drop(),
  };
}());
