"""L-BFGS: quasi-Newton steps from a limited history of gradient and position changes, with a
fixed step (lr) or a strong-Wolfe line search. Scalars stay 0-d tensors where PyTorch keeps
them so (dot products and what is computed from them), for the same rounding in float32."""
import ember
from ember.optim.optimizer import Optimizer

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None, *, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn,
                        maximize=maximize)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        """Every gradient in one vector (zeros for parameters without one), negated when maximizing."""
        views = [p.grad.reshape(-1) if p.grad is not None else ember.zeros(p.numel(), dtype=p.dtype)
                 for p in self._params]
        flat = ember.cat(views, 0)
        return flat.neg() if self.param_groups[0]["maximize"] else flat

    def _loss(self, closure):
        """The closure's loss as a float (negated when maximizing) and the flat gradient."""
        with ember.enable_grad():
            loss = float(closure())
        return (-loss if self.param_groups[0]["maximize"] else loss), self._flat_grad()

    def _add_grad(self, step_size, direction):
        """params += step_size · direction, the flat direction cut back into the parameters' shapes."""
        if isinstance(step_size, ember.Tensor):
            step_size = step_size.item()
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(direction[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t·d; the parameters are put back to x afterwards."""
        self._add_grad(t, d)
        loss, flat_grad = self._loss(closure)
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def step(self, closure):
        """Up to max_iter iterations, each evaluating `closure` (required: it re-computes the
        loss and gradients) one or more times; returns the first loss."""
        self._call_step_pre_hooks()
        with ember.no_grad():
            loss = self._step(closure)
        self._call_step_post_hooks()
        return loss

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with ember.enable_grad():
            orig_loss = closure()
        loss = -float(orig_loss) if group["maximize"] else float(orig_loss)
        flat_grad = self._flat_grad()
        current_evals = 1
        state["func_evals"] += 1
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                self._remember(state, flat_grad.sub(prev_flat_grad), d.mul(t), group["history_size"])
                d = self._direction(state, flat_grad, group["history_size"])
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            # the first step ever is cut to at most lr / |g|_1, as the gradient's scale is unknown
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break
            last = n_iter == max_iter
            loss, flat_grad, t, evals = self._move(closure, group, d, t, loss, flat_grad, gtd, max_eval - current_evals, last)
            current_evals += evals
            state["func_evals"] += evals
            if (last or current_evals >= max_eval or flat_grad.abs().max() <= tolerance_grad
                    or d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break
        state.update(d=d, t=t, prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _move(self, closure, group, d, t, loss, flat_grad, gtd, evals_left, last):
        """Steps the parameters along d, by t or by the strong-Wolfe line search's step; returns
        the loss and flat gradient there, the step and the closure evaluations spent. Without a
        line search the last iteration's point is not evaluated (the next call starts with it)."""
        if group["line_search_fn"] is None:
            self._add_grad(t, d)
            if last:
                return loss, flat_grad, t, 0
            return *self._loss(closure), t, 1
        if group["line_search_fn"] != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")
        x_init = [p.clone() for p in self._params]
        loss, flat_grad, t, evals = _strong_wolfe(
            lambda x, step, direction: self._directional_evaluate(closure, x, step, direction),
            x_init, t, d, loss, flat_grad, gtd, max_ls=evals_left)
        self._add_grad(t, d)
        return loss, flat_grad, t, evals

    @staticmethod
    def _remember(state, y, s, history_size):
        """Adds the gradient change y and step s to the history when their curvature y·s is
        safely positive (dropping the oldest pair when full), and rescales the initial Hessian."""
        ys = y.dot(s)
        if ys > 1e-10:
            if len(state["old_dirs"]) == history_size:
                for key in ("old_dirs", "old_stps", "ro"):
                    state[key].pop(0)
            state["old_dirs"].append(y)
            state["old_stps"].append(s)
            state["ro"].append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)

    @staticmethod
    def _direction(state, flat_grad, history_size):
        """The two-loop recursion: -H·g for the inverse Hessian H the history implies."""
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i].item())
        r = q * state["H_diag"]
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=(al[i] - be_i).item())
        return r


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped
    to `bounds` (default: between x1 and x2); their midpoint when the cubic has none."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, low), high)


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step t along d meeting the strong Wolfe conditions (sufficient decrease c1, curvature
    c2): grows t until an interval brackets a minimum, then zooms into it. Returns the loss,
    gradient and t there, and how many evaluations it took."""
    d_norm = d.abs().max()
    f_new, g_new = obj_func(x, t, d)
    evals, ls_iter = 1, 0
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g.clone(), gtd
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            break
        if abs(gtd_new) <= -c2 * gtd:
            return f_new, g_new, t, evals
        if gtd_new >= 0:
            break
        # extrapolate, to somewhere in [t + 0.01 (t - t_prev), 10 t]
        t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                    bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:  # no bracket found: what is left is the interval from 0 (no zoom follows)
        return _zoom(obj_func, x, d, f, gtd, [0, t], [f, f_new], [g, g_new], None, d_norm, c1, c2,
                     tolerance_change, max_ls, ls_iter, evals)
    return _zoom(obj_func, x, d, f, gtd, [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new],
                 d_norm, c1, c2, tolerance_change, max_ls, ls_iter, evals)


def _zoom(obj_func, x, d, f, gtd, bracket, bracket_f, bracket_g, bracket_gtd, d_norm, c1, c2, tolerance_change,
          max_ls, ls_iter, evals):
    """Shrinks the bracket around a strong-Wolfe step by cubic interpolation; returns the best
    end's loss, gradient, step and the evaluation count."""
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        t, insuf_progress = _keep_inside(t, bracket, insuf_progress)
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        done = False
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:  # the minimum lies beyond low: low becomes high
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new.clone(), gtd_new
        if done:
            break
    return bracket_f[low], bracket_g[low], bracket[low], evals


def _keep_inside(t, bracket, insuf_progress):
    """Moves a trial step that falls within 10% of the bracket's width of one of its ends to
    that distance, when the previous trial was that close too or t left the bracket; returns
    the step and whether this one made insufficient progress."""
    top, bottom = max(bracket), min(bracket)
    eps = 0.1 * (top - bottom)
    if min(top - t, t - bottom) >= eps:
        return t, False
    if not (insuf_progress or t >= top or t <= bottom):
        return t, True
    return (top - eps if abs(t - top) < abs(t - bottom) else bottom + eps), False
