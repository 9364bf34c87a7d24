"""Runs a placed module's forward and backward with each device on a thread
of its own, so that a split really runs in parallel (docs/python.md,
"Running in parallel").

The module's forward is traced with torch.fx (symbolic_trace's tracer,
recording the innermost module each node was made in) and each node goes
to the device of its module. A device's nodes, in the trace's order, are
cut into stages: a stage starts at a node that reads a value made on
another device and ends after a node whose value another device reads. A
stage reads the values of other stages as fresh autograd leaves, so every
stage has an autograd graph of its own:

- forward: each device's thread runs its stages in order, a stage waiting
  for the stages it reads; independent branches on different devices
  overlap (torch's kernels release the GIL).
- backward: the whole forward is one autograd.Function; its backward hands
  each device's thread its stages in reverse order, a stage waiting for the
  gradients of the values other stages read from it, then running
  torch.autograd.backward on its own graph (autograd runs a CPU backward on
  the thread that calls it, and concurrent calls from several threads run
  concurrently), which accumulates its parameters' gradients and the
  gradients of its leaves, sent on to the stages that made them.

Each CPU device's thread runs torch's kernels with as many intra-op threads
as the device has cores, pinned to them (the executor's CPU devices: `devplace
clusters --detect --cpu-devices N`); a GPU device's thread drives cuda:i.
"""

import copy
import operator
import os
import queue
import threading

import torch
from torch.utils import _pytree as pytree


class _ModulePathTracer(torch.fx.Tracer):
    """symbolic_trace's tracer, recording in node.meta["devplace_module"]
    the innermost module whose forward made the node. `split_modules`:
    modules torch.fx would keep whole (torch.nn's own) that it traces
    into instead, so that their children can go to different devices."""

    def __init__(self, split_modules=()):
        super().__init__()
        self._modules = []
        self._split = set(split_modules)

    def is_leaf_module(self, module, qualified_name):
        if qualified_name in self._split and any(True for _ in module.children()):
            return False
        return super().is_leaf_module(module, qualified_name)

    def call_module(self, module, forward, args, kwargs):
        self._modules.append(self.path_of_module(module))
        try:
            return super().call_module(module, forward, args, kwargs)
        finally:
            self._modules.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["devplace_module"] = self._modules[-1] if self._modules else ""
        return node


class _KeepAutogradFunctions:
    """While tracing, a torch.autograd.Function applied to traced values is
    one node (calling its apply) rather than the ops of its forward, which
    symbolic tracing would record instead, losing its backward."""

    def __init__(self, tracer):
        self.tracer = tracer

    def __enter__(self):
        self.original = torch.autograd.Function.__dict__.get("apply")
        tracer = self.tracer
        applies = torch._C._FunctionBase.__dict__["apply"]  # the classmethod every Function inherits

        def apply(cls, *args):
            if any(isinstance(a, torch.fx.Proxy) for a in pytree.tree_flatten(args)[0]):
                return tracer.create_proxy("call_function", applies.__get__(None, cls), args, {})
            return applies.__get__(None, cls)(*args)

        torch.autograd.Function.apply = classmethod(apply)
        return self

    def __exit__(self, *exc):
        if self.original is None:
            del torch.autograd.Function.apply
        else:
            torch.autograd.Function.apply = self.original
        return False


class _WatchGradMode:
    """Notes whether the traced forward switches autograd on or off
    (torch.no_grad() inside it): torch.fx does not record it, so the
    traced graph would compute gradients the forward does not."""

    def __enter__(self):
        self.original = torch._C._set_grad_enabled
        self.switched = False

        def set_grad_enabled(mode):
            self.switched = True
            return self.original(mode)

        torch._C._set_grad_enabled = set_grad_enabled
        return self

    def __exit__(self, *exc):
        torch._C._set_grad_enabled = self.original
        return False


def _trace(tracer, model):
    with _KeepAutogradFunctions(tracer), _WatchGradMode() as grad_mode:
        graph = tracer.trace(model)
    if grad_mode.switched:
        raise NotParallel("the forward switches autograd on or off (torch.no_grad() inside it), "
                          "which torch.fx does not record")
    return graph


def trace_module_graph(model, split_modules=()):
    """The torch.fx graph of model's forward, each node tagged with its
    module, torch.nn's modules of `split_modules` traced into where torch.fx
    can (where it cannot, such as TransformerEncoder's checks on its input,
    they are kept whole). Raises what torch.fx raises for a forward it
    cannot trace, NotParallel for one whose graph would not compute what it
    does."""
    if split_modules:
        try:
            return _trace(_ModulePathTracer(split_modules), model)
        except NotParallel:
            raise
        except Exception:  # noqa: BLE001 -- a torch.nn module whose forward only runs on tensors
            pass
    return _trace(_ModulePathTracer(), model)


_RANDOM_FUNCTIONS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                     "feature_dropout", "bernoulli", "rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                     "randint_like", "normal", "multinomial", "poisson", "rrelu"}
_RANDOM_METHODS = {"bernoulli", "bernoulli_", "uniform_", "normal_", "random_", "exponential_", "geometric_",
                   "cauchy_", "log_normal_", "multinomial"}


def _draws_random(node, modules):
    """Whether the node may draw from torch's generator: a random function
    or method, a module that is or holds a dropout, or one with a dropout
    rate of its own (attention, recurrent layers) above 0."""
    if node.op == "call_function":
        return getattr(node.target, "__name__", "") in _RANDOM_FUNCTIONS
    if node.op == "call_method":
        return node.target in _RANDOM_METHODS
    if node.op == "call_module":
        module = modules.get(node.target)
        if module is None:
            return False
        for m in module.modules():
            if isinstance(m, (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)):
                return True
            rate = getattr(m, "dropout", 0)
            if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > 0:
                return True
    return False


def _mutated_argument(node, modules):
    """The node whose value `node` modifies in place (its first argument),
    or None: methods and functions named with a trailing underscore,
    setitem, inplace=True, a module with inplace set."""
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return None
    first = node.args[0]
    if node.op == "call_method" and node.target.endswith("_") and not node.target.startswith("__"):
        return first
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        if node.target is operator.setitem or node.kwargs.get("inplace") is True or (
                name.endswith("_") and not name.startswith("__")):
            return first
    if node.op == "call_module" and getattr(modules.get(node.target), "inplace", False) is True:
        return first
    return None


class _Stage:
    def __init__(self, index, device):
        self.index = index
        self.device = device
        self.nodes = []
        self.inputs = []           # nodes (of other stages, placeholders) this stage reads, in order
        self.outputs = []          # nodes of this stage read by other stages or returned
        self.producers = set()     # indices of the stages it reads from
        self.gradient_sources = 0  # reads of its outputs by other stages and by the output


class NotParallel(Exception):
    """Why a module's forward cannot run split over threads."""


class _Failed(Exception):
    """Another device's stage failed: this one stops without running."""


class _Run:
    """One call's values, events and gradients."""

    def __init__(self, stages):
        self.exported = {}  # node -> value as other stages read it
        self.leaves = [dict() for _ in stages]  # per stage: node -> its leaves (flat list)
        self.done = [threading.Event() for _ in stages]
        self.error = None
        self.lock = threading.Lock()
        self.gradients = {}  # node -> flat list of accumulated gradients (None: none yet)
        self.pending = [s.gradient_sources for s in stages]
        self.gradients_ready = [threading.Event() for _ in stages]
        self.input_gradients = {}
        self.threads = {}  # device -> {"forward": set of thread idents, "backward": ...}

    def fail(self, error):
        with self.lock:
            if self.error is None:
                self.error = error
        for event in self.done + self.gradients_ready:
            event.set()


class _DeviceThread:
    """A daemon thread running the jobs given to it, with its own intra-op
    thread count, affinity and CUDA device."""

    def __init__(self, torch_device, intra_op_threads, cores):
        self.jobs = queue.Queue()
        started = threading.Event()

        def loop():
            torch.get_num_threads()  # torch's lazy per-thread setup first, or it would undo ours
            torch.set_num_threads(intra_op_threads)
            if cores:
                try:
                    os.sched_setaffinity(0, cores)  # 0: this thread (Linux)
                except OSError:
                    pass  # cores this process may not use: run unpinned
            if torch_device.type == "cuda":
                torch.cuda.set_device(torch_device)
            self.intra_op_threads = torch.get_num_threads()
            started.set()
            while True:
                job = self.jobs.get()
                if job is None:
                    return
                job()

        self.thread = threading.Thread(target=loop, daemon=True, name=f"devplace {torch_device}")
        self.thread.start()
        started.wait()

    def stop(self):
        self.jobs.put(None)


class PlacedExecutor:
    """The placed module's forward (set as model.forward by place_module):
    `graph` is trace_module_graph(model)'s, traced in the modules' present
    train/eval modes (a call in other modes runs the forward as written);
    `device_of_node` the cluster device of each of its call and get_attr
    nodes; `torch_devices` and `cores` per cluster device (a device's thread
    has as many intra-op threads, and with pin_threads runs on them only).
    last_threads says which threads ran each device's stages in the last
    forward and backward (empty after a call run as written)."""

    def __init__(self, model, graph, device_of_node, torch_devices, cores, pin_threads=True):
        self.model = model
        self.graph = graph
        self._modules = dict(model.named_modules())
        self._traced_modes = self._modes()  # each module's training flag as the trace met it
        self._torch_devices = torch_devices
        self._cores = cores
        self._pin_threads = pin_threads
        self._placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        self._output = next(n for n in graph.nodes if n.op == "output")
        self._build_stages(device_of_node)
        self.devices = sorted({s.device for s in self.stages})
        self._stages_of = {d: [s for s in self.stages if s.device == d] for d in self.devices}
        self.last_threads = {}
        self._threads = {}
        self._start_threads()

    def _start_threads(self):
        main_threads = torch.get_num_threads()
        cpu_devices = [d for d in self.devices if self._torch_devices[d].type == "cpu"]
        for d in self.devices:
            own = self._cores[d] if d < len(self._cores) else []
            intra_op = len(own) if own else max(1, main_threads // max(1, len(cpu_devices)))
            self._threads[d] = _DeviceThread(self._torch_devices[d], intra_op, own if self._pin_threads else [])
        torch.set_num_threads(main_threads)  # the default new threads take, which the device threads changed

    @property
    def intra_op_threads(self):
        """Device -> torch's intra-op threads on its thread (as the thread
        reads torch.get_num_threads()); empty while no threads run."""
        return {d: t.intra_op_threads for d, t in self._threads.items()}

    def close(self):
        """Stops the device threads; the next call starts new ones."""
        for thread in getattr(self, "_threads", {}).values():
            thread.stop()
        self._threads = {}

    def __del__(self):
        self.close()

    def __deepcopy__(self, memo):
        """The executor of the copied model (copy.deepcopy of a placed
        module): the same stages, the copy's modules, threads of its own
        started at its first call."""
        clone = object.__new__(PlacedExecutor)
        clone.__dict__.update(self.__dict__)
        memo[id(self)] = clone
        clone.model = copy.deepcopy(self.model, memo)
        clone._modules = None  # the copy's modules, looked up once the copy is whole
        clone._threads = {}
        clone.last_threads = {}
        return clone

    def _module(self, name):
        if self._modules is None:
            self._modules = dict(self.model.named_modules())
        return self._modules[name]

    # -- the stages --------------------------------------------------------

    def _build_stages(self, device_of_node):
        nodes = [n for n in self.graph.nodes if n.op in ("call_module", "call_function", "call_method")]
        self._device_of = {n: device_of_node[n] for n in nodes}
        readers = {n: [u for u in n.users if u in self._device_of] for n in nodes}
        self.stages = []
        open_stage = {}  # device -> its stage still taking nodes
        self._stage_of = {}
        # Random nodes draw from torch's one generator: each is a stage of
        # its own that waits for the one before it in the trace, so that
        # they draw in the order the forward as written draws (the same
        # dropout masks, run after run, as the unplaced module's).
        previous_random = None
        for n in nodes:
            d = self._device_of[n]
            reads_other_device = any(i in self._device_of and self._device_of[i] != d for i in n.all_input_nodes)
            random = _draws_random(n, self._modules)
            if d not in open_stage or reads_other_device or random:
                open_stage[d] = _Stage(len(self.stages), d)
                self.stages.append(open_stage[d])
            stage = open_stage[d]
            stage.nodes.append(n)
            self._stage_of[n] = stage
            if random:
                if previous_random is not None:
                    stage.producers.add(previous_random.index)
                previous_random = stage
                del open_stage[d]
            elif any(self._device_of[u] != d for u in readers[n]):
                del open_stage[d]  # another device waits for this node: the stage ends here
        for n in nodes:
            target = _mutated_argument(n, self._modules)
            if target is None:
                continue
            stage = self._stage_of[n]
            if self._stage_of.get(target) is not stage or any(self._stage_of.get(u) is not stage
                                                               for u in target.users):
                # Another device would read the value before or after the
                # change depending on timing: only program order is right.
                raise NotParallel(f"'{n.name}' modifies '{target.name}' in place, which another device reads")
        for stage in self.stages:
            inside = set(stage.nodes)
            for n in stage.nodes:
                for i in n.all_input_nodes:
                    if i in inside or i.op == "get_attr" or i in stage.inputs:
                        continue
                    stage.inputs.append(i)
                    if i in self._stage_of:
                        stage.producers.add(self._stage_of[i].index)
                        producer = self._stage_of[i]
                        if i not in producer.outputs:
                            producer.outputs.append(i)
                        producer.gradient_sources += 1
        self._output_leaves, _ = pytree.tree_flatten(self._output.args[0])
        for n in self._output_leaves:
            if isinstance(n, torch.fx.Node) and n in self._stage_of:
                stage = self._stage_of[n]
                if n not in stage.outputs:
                    stage.outputs.append(n)
                stage.gradient_sources += 1

    # -- forward -----------------------------------------------------------

    def _fetch_attribute(self, target):
        value = self.model
        for part in target.split("."):
            value = getattr(value, part)
        return value

    def _run_forward_stage(self, run, stage, grad):
        for producer in stage.producers:
            run.done[producer].wait()
        if run.error is not None:
            raise _Failed()
        device = self._torch_devices[stage.device]
        env = {}
        for i in stage.inputs:
            value = run.exported[i]
            flat, spec = pytree.tree_flatten(value)
            leaves = []
            for v in flat:
                if torch.is_tensor(v):
                    needs_grad = grad and v.requires_grad
                    v = v.detach().to(device)
                    if needs_grad:
                        v.requires_grad_()
                leaves.append(v)
            run.leaves[stage.index][i] = leaves
            env[i] = pytree.tree_unflatten(leaves, spec)

        def value_of(n):
            if n.op == "get_attr":
                return self._fetch_attribute(n.target)
            return env[n]

        with torch.set_grad_enabled(grad):
            for n in stage.nodes:
                args = torch.fx.node.map_arg(n.args, value_of)
                kwargs = torch.fx.node.map_arg(n.kwargs, value_of)
                if n.op == "call_module":
                    env[n] = self._module(n.target)(*args, **kwargs)
                elif n.op == "call_function":
                    env[n] = n.target(*args, **kwargs)
                else:
                    env[n] = getattr(args[0], n.target)(*args[1:], **kwargs)
            for n in stage.outputs:
                run.exported[n] = env[n]

    def _device_job(self, run, device, work, phase):
        def job():
            idents = run.threads.setdefault(device, {}).setdefault(phase, set())
            idents.add(threading.get_ident())
            try:
                work()
            except _Failed:
                pass
            except BaseException as error:  # noqa: B902 -- handed to the caller's thread
                run.fail(error)

        return job

    def _dispatch(self, run, work_of_device, phase):
        if not self._threads:
            self._start_threads()
        finished = {d: threading.Event() for d in self.devices}
        for d in self.devices:
            work = self._device_job(run, d, work_of_device(d), phase)

            def job(work=work, event=finished[d]):
                try:
                    work()
                finally:
                    event.set()

            self._threads[d].jobs.put(job)
        for event in finished.values():
            event.wait()
        if run.error is not None:
            raise run.error

    def _forward(self, run, inputs, grad):
        for placeholder, value in zip(self._placeholders, inputs):
            run.exported[placeholder] = value

        def work_of_device(d):
            def work():
                for stage in self._stages_of[d]:
                    try:
                        self._run_forward_stage(run, stage, grad)
                    except _Failed:
                        raise
                    except BaseException as error:  # noqa: B902 -- recorded before the stage's readers wake
                        run.fail(error)
                        raise _Failed() from None
                    finally:
                        run.done[stage.index].set()
            return work

        self._dispatch(run, work_of_device, "forward")
        self.last_threads = run.threads

        return torch.fx.node.map_arg(self._output.args[0], lambda n: self._output_value(run, n))

    def _output_value(self, run, n):
        if not isinstance(n, torch.fx.Node):
            return n
        if n.op == "get_attr":
            return self._fetch_attribute(n.target)
        return run.exported[n]

    # -- backward ----------------------------------------------------------

    def _add_gradients(self, run, node, gradients):
        with run.lock:
            current = run.gradients.get(node)
            if current is None:
                run.gradients[node] = list(gradients)
            else:
                run.gradients[node] = [a if b is None else b if a is None else a + b
                                       for a, b in zip(current, gradients)]

    def _gradient_arrived(self, run, stage_index):
        with run.lock:
            run.pending[stage_index] -= 1
            ready = run.pending[stage_index] == 0
        if ready:
            run.gradients_ready[stage_index].set()

    def _run_backward_stage(self, run, stage):
        if stage.gradient_sources:
            run.gradients_ready[stage.index].wait()
        if run.error is not None:
            raise _Failed()
        tensors, gradients = [], []
        for n in stage.outputs:
            flat, _ = pytree.tree_flatten(run.exported[n])
            for value, gradient in zip(flat, run.gradients.get(n, [])):
                if gradient is not None and torch.is_tensor(value) and value.requires_grad:
                    tensors.append(value)
                    gradients.append(gradient.to(value.device))
        if tensors:
            torch.autograd.backward(tensors, gradients)
        for i in stage.inputs:
            leaves = run.leaves[stage.index][i]
            made = pytree.tree_flatten(run.exported[i])[0]
            # each gradient on the device of the value it is for, where the
            # stages that made and read it differ (two GPUs)
            sent = [v.grad.to(m.device) if torch.is_tensor(v) and v.requires_grad and v.grad is not None else None
                    for v, m in zip(leaves, made)]
            if i in self._stage_of:
                self._add_gradients(run, i, sent)
                self._gradient_arrived(run, self._stage_of[i].index)
            else:
                with run.lock:
                    run.input_gradients.setdefault(i, []).append(sent)

    def _backward(self, run, output_gradients):
        position = 0
        for n in self._output_leaves:
            width = len(pytree.tree_flatten(self._output_value(run, n))[0])
            if isinstance(n, torch.fx.Node) and n in self._stage_of:
                self._add_gradients(run, n, output_gradients[position:position + width])
                self._gradient_arrived(run, self._stage_of[n].index)
            position += width

        def work_of_device(d):
            def work():
                for stage in reversed(self._stages_of[d]):
                    self._run_backward_stage(run, stage)  # a failure wakes every waiting stage (_Run.fail)
            return work

        self._dispatch(run, work_of_device, "backward")
        self.last_threads = {d: dict(self.last_threads.get(d, {}), **phases) for d, phases in run.threads.items()}
        input_gradients = []
        for placeholder in self._placeholders:
            total = None
            for sent in run.input_gradients.get(placeholder, []):
                total = sent if total is None else [a if b is None else b if a is None else a + b
                                                     for a, b in zip(total, sent)]
            width = len(pytree.tree_flatten(run.exported[placeholder])[0])
            input_gradients.extend(total if total is not None else [None] * width)
        return input_gradients

    # -- the module's forward ----------------------------------------------

    def _bind(self, args, kwargs):
        values = []
        for k, placeholder in enumerate(self._placeholders):
            if k < len(args):
                values.append(args[k])
            elif placeholder.target in kwargs:
                values.append(kwargs[placeholder.target])
            elif placeholder.args:
                values.append(placeholder.args[0])  # the forward's default
            else:
                raise TypeError(f"forward() missing argument '{placeholder.target}'")
        return values

    def _modes(self):
        return tuple(m.training for m in self.model.modules())

    def __call__(self, *args, **kwargs):
        if self._modes() != self._traced_modes:
            # The trace took the branches of the modes it met (`if
            # self.training` is Python, not a node): in other modes (eval)
            # the forward runs as written, on the calling thread.
            self.last_threads = {}
            return type(self.model).forward(self.model, *args, **kwargs)
        inputs = self._bind(args, kwargs)
        grad = torch.is_grad_enabled() and (any(p.requires_grad for p in self.model.parameters()) or any(
            v.requires_grad for v in pytree.tree_flatten(inputs)[0] if torch.is_tensor(v)))
        if not grad:
            return self._forward(_Run(self.stages), inputs, False)
        flat_inputs, spec = pytree.tree_flatten(inputs)
        tensor_positions = [k for k, v in enumerate(flat_inputs) if torch.is_tensor(v)]
        anchor = torch.empty(0, requires_grad=True)  # the outputs need grad through the parameters
        holder = {}
        flat_outputs = _PlacedStep.apply(self, holder, flat_inputs, spec, tensor_positions, anchor,
                                         *[flat_inputs[k] for k in tensor_positions])
        return pytree.tree_unflatten(list(flat_outputs), holder["output_spec"])


class _PlacedStep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, executor, holder, flat_inputs, spec, tensor_positions, anchor, *tensors):
        flat = list(flat_inputs)
        for k, tensor in zip(tensor_positions, tensors):
            flat[k] = tensor
        run = _Run(executor.stages)
        output = executor._forward(run, pytree.tree_unflatten(flat, spec), True)
        flat_output, holder["output_spec"] = pytree.tree_flatten(output)
        ctx.executor, ctx.run = executor, run
        ctx.tensor_positions = tensor_positions
        ctx.set_materialize_grads(False)
        returned = []
        for v in flat_output:
            if torch.is_tensor(v):
                returned.append(v.detach())
                if not v.requires_grad:
                    ctx.mark_non_differentiable(returned[-1])
            else:
                returned.append(v)
        return tuple(returned)

    @staticmethod
    def backward(ctx, *output_gradients):
        if ctx.run is None:
            # Each stage's graph was freed by its backward, as autograd frees
            # one without retain_graph: keeping them would hold two steps'
            # activations while the caller holds the last loss.
            raise RuntimeError("backward through a placed module a second time: its devices' graphs are freed "
                               "after the first (retain_graph=True is not supported through a placed module)")
        if torch.is_grad_enabled():
            raise RuntimeError("backward(create_graph=True) through a placed module is not supported")
        input_gradients = ctx.executor._backward(ctx.run, list(output_gradients))
        ctx.run = None  # the stages' graphs are spent
        return (None, None, None, None, None, None) + tuple(input_gradients[k] for k in ctx.tensor_positions)
