"""Workload and budget page: which marginals matter, epsilon/delta, the mechanism."""

from dataclasses import replace

import streamlit as st

from app_pages.common import (MODE_LABELS, PAGES, attempt, data_page, flash, show_error,
                              sync_widgets)
from app_pages.whatif_section import whatif_section
from synth_core.mechanisms import MECHANISMS
from synth_core.workbench import (DELTA_GRID, EPSILON_GRID, choice_of, guided_choices,
                                  mechanism_description, mechanism_parameters, workload_spec)

wb = data_page("Workload and budget")
s = wb.settings
names = list(wb.schema.names)

st.subheader("Workload")
st.caption("The marginals (column combinations) whose counts the synthetic data should "
           "preserve best. The mechanism picks which to measure; the error is judged on these.")
try:
    w = wb.workload()
    st.markdown(f"Current: `{s.workload}`, **{len(w)} marginals** "
                f"({', '.join(' × '.join(c) for c in w.cliques[:6])}{', …' if len(w) > 6 else ''})")
except Exception as exc:  # noqa: BLE001
    show_error(exc)

kinds = {"all": "All k-way marginals", "target": "Around target column(s)",
         "custom": "Custom list with weights"}
kind = st.radio("Build", list(kinds), format_func=kinds.get, horizontal=True, key="wl_kind")
with st.form("workload_form"):
    custom_text = ""
    targets = []
    k = 0
    if kind != "custom" and len(names) > 1:
        k = st.slider("k (columns per marginal)", 1, min(4, len(names)), min(3, len(names)),
                      key="wl_k")
    elif kind != "custom":   # a slider needs two values to choose between
        k = 1
        st.caption("k (columns per marginal): 1, the table's only column.")
    if kind == "target":
        default = [wb.target] if wb.target in names else names[-1:]
        targets = st.multiselect("Target column(s)", names, default=default, key="wl_targets")
    if kind == "custom":
        custom_text = st.text_area(
            "One marginal per line: columns separated by commas, optional `* weight`",
            value=f"{names[0]}, {names[1]}\n{names[0]}, {names[-1]} * 2" if len(names) > 1
            else names[0], key="wl_custom", height=120)
    submitted = st.form_submit_button("Use this workload")
if submitted:
    try:
        custom = []
        for line in custom_text.splitlines():
            if not line.strip():
                continue
            cols, _, weight = line.partition("*")
            try:
                wt = float(weight) if weight.strip() else 1.0
            except ValueError:
                from synth_core.errors import WorkloadError
                raise WorkloadError(f"The weight {weight.strip()!r} in line {line.strip()!r} is "
                                    "not a number.", hint="Write e.g. `age, sex * 2`.") from None
            custom.append(([c.strip() for c in cols.split(",")], wt))
        spec = workload_spec(kind, k=k, targets=targets, custom=custom)
        wb.update_settings(workload=spec)
        flash(f"Workload set to {spec}.")
        st.rerun()
    except Exception as exc:  # noqa: BLE001
        show_error(exc)

st.subheader("Privacy budget and mechanism")
fits = {f.choice.key: f for f in guided_choices(public_rows=wb.public.has_rows,
                                                public_columns=bool(wb.public.columns))}
saved_choice = choice_of(s.mechanism, s.options).key if s.mechanism in MECHANISMS else "aim"
saved = {   # the saved settings: what every widget below shows until changed
    "mechanism": saved_choice if saved_choice in fits else next(iter(fits)),
    "epsilon": min(EPSILON_GRID, key=lambda e: abs(e - s.epsilon)),
    "delta": min(DELTA_GRID, key=lambda d: abs(d - s.delta)),
    "neighbours": s.neighbours,
    "rounds_default": s.rounds is None,
    "rounds": int(s.rounds or mechanism_parameters(s.mechanism).get("rounds") or 16 * len(names)),
    "max_model_size": min(max(float(s.max_model_size), 0.1), 10000.0),   # the box's range
    "fit_iters_default": s.fit_iters is None,
    "fit_iters": int(s.round_fit_iters),
    "final_fit_iters": int(s.final_fit_iters),
    "run_mode": s.run_mode,
    "seed": int(s.seed or 0),
}
sync_widgets("settings", s, saved)
st.caption(f"Public information marked: **{wb.public_summary()}** (Public information page). "
           "Each entry says what it does with it; an entry marked unavailable would be "
           "refused with it.")
choice_key = st.selectbox("Mechanism", list(fits), index=list(fits).index(saved["mechanism"]),
                          format_func=lambda k: fits[k].label, key="mechanism",
                          help="Every mechanism of synth_core (and the conditional-generation "
                               "variants); which fit is read off each one's declared "
                               "capabilities.")
fit = fits[choice_key]
choice = fit.choice
mech = choice.mechanism
st.caption(mechanism_description(mech))
if not fit.available:
    st.warning(fit.reason_in("app"), icon=":material/block:")
m1, m2 = st.columns([3, 1])
run_mode = m1.radio("Run mode", list(MODE_LABELS), format_func=MODE_LABELS.get, key="run_mode",
                    index=list(MODE_LABELS).index(saved["run_mode"]),
                    help="Where the noise comes from; saved with *Save settings* below. Both "
                         "modes charge the same privacy budget.")
seed = m2.number_input("Seed (research mode only)", min_value=0, value=saved["seed"], key="seed",
                       disabled=run_mode == "release",
                       help="The same seed, data and settings give the same run, draw for draw.")
st.caption("A new session starts in **release** mode: what you download from this workbench is "
           "normally meant to be published, so its noise is OpenDP's exact discrete Gaussian and "
           "noisy max with secure randomness, and it cannot be repeated. Choose **research** "
           "mode to repeat a run exactly (experiments, debugging); its floating-point noise is "
           "not hardened against attacks on the noise, so do not publish its output. The "
           "Compare page always makes seeded research runs.")
params = mechanism_parameters(mech)
shown_rounds = saved["rounds"]        # the rounds box's value before any typing
with st.form("budget_form"):
    c1, c2, c3 = st.columns(3)
    eps = c1.select_slider("Epsilon (log scale)", EPSILON_GRID, value=saved["epsilon"],
                           key="epsilon")
    delta = c2.select_slider("Delta", DELTA_GRID, format_func=lambda d: f"{d:g}",
                             value=saved["delta"], key="delta")
    neighbours = c3.radio("Neighbouring datasets", ["bounded", "unbounded"], key="neighbours",
                          index=["bounded", "unbounded"].index(saved["neighbours"]),
                          help="bounded: replace one record (n public; JAM-PGM's setting); "
                               "unbounded: add/remove one record (AIM's setting).")
    st.markdown("**Hyper-parameters** (the mechanism's defaults unless changed; docs/mechanisms.md says where they depart from its paper)")
    h1, h2, h3, h4 = st.columns(4)
    rounds_default = params.get("rounds")
    if "rounds" in params:
        use_default = h1.checkbox(
            f"Default rounds ({rounds_default})" if rounds_default else
            "Default rounds (set by the mechanism)", value=saved["rounds_default"],
            key="rounds_default")
        rounds = h1.number_input("Rounds T", min_value=1, max_value=10000,
                                 value=saved["rounds"], key="rounds")
    else:
        use_default, rounds = True, None
    size = h2.number_input("Max model size (MB)", min_value=0.1, max_value=10000.0,
                           value=saved["max_model_size"], key="max_model_size",
                           disabled="max_model_size" not in params)
    fit_default = h3.checkbox(
        f"Default fit iterations ({MECHANISMS[mech].fit_iters})",
        value=saved["fit_iters_default"], key="fit_iters_default",
        help="Up to 1000 mirror-descent iterations per round for AIM, as its authors (its "
             "annealing test needs a fit that has moved as far as it will), 100 for the others. "
             "A fit also stops once it has converged. vJAM-PGM gains from 1,000: 20-34% lower "
             "error on Adult with half or more of the columns public, at 3-9 times the CPU "
             "(docs/mechanisms.md); JAM-PGM does not.")
    fit_iters = h3.number_input("Fit iterations per round", min_value=1, max_value=10000,
                                value=saved["fit_iters"], key="fit_iters")
    final_iters = h4.number_input("Final fit iterations", min_value=1, max_value=100000,
                                  value=saved["final_fit_iters"], key="final_fit_iters")
    # the mechanism's declared on/off and numeric options with a fixed default
    # (conditional generation is an entry of the list, its bound only for that entry)
    extra = [o for o in MECHANISMS[mech].options
             if o.name not in ("rounds", "max_model_size", "public_columns", "conditional")
             and (o.name != "condition_max_mb" or choice.conditional)
             and o.type in (bool, int, float) and o.default is not None]
    options = {}
    if extra:
        with st.expander(f"Advanced: {choice.title}'s own parameters (its defaults)"):
            cols = st.columns(min(4, len(extra)))
            for i, opt in enumerate(extra):
                name, default = opt.name, opt.default
                current = s.options.get(name, default) if mech == s.mechanism else default
                if opt.type is bool:
                    value = cols[i % len(cols)].checkbox(
                        name, value=bool(current), key=f"opt_{mech}_{name}", help=opt.help)
                elif opt.type is int:
                    value = cols[i % len(cols)].number_input(name, value=int(current), step=1,
                                                             key=f"opt_{mech}_{name}",
                                                             help=opt.help)
                else:
                    value = cols[i % len(cols)].number_input(name, value=float(current),
                                                             format="%g", key=f"opt_{mech}_{name}",
                                                             help=opt.help)
                if value != default:
                    options[name] = value
    save_clicked = st.form_submit_button("Save settings", type="primary",
                                         disabled=not fit.available)
if save_clicked:
    changes = dict(mechanism=mech, epsilon=float(eps), delta=float(delta), neighbours=neighbours,
                   rounds=None if use_default else int(rounds), max_model_size=float(size),
                   fit_iters=None if fit_default else int(fit_iters),
                   final_fit_iters=int(final_iters), mode=None,
                   seed=None if run_mode == "release" else int(seed),
                   options=choice.options(options))
    chosen = wb.mechanism_fit(replace(s, **changes))   # with the neighbours chosen above
    if not chosen.available:
        st.error(chosen.reason_in("app"), icon=":material/error:")
    elif attempt(wb.update_settings, **changes):
        unused = use_default and rounds is not None and int(rounds) != int(shown_rounds)
        flash("Settings saved." + (f" Rounds T = {int(rounds)} was not used: 'Default rounds' "
                                   "is ticked (untick it to set the rounds)." if unused else ""))
        st.rerun()
else:
    if choice_key != saved_choice and fit.available:
        st.caption(f"Press *Save settings* to switch to {choice.title}.")
    if run_mode != s.run_mode or (run_mode == "research" and int(seed) != s.seed):
        st.caption(f"Press *Save settings* to switch to {run_mode} mode"
                   + (f" with seed {int(seed)}." if run_mode == "research" else "."))

try:
    b = wb.budget_summary()
    secs, how = wb.estimate_seconds()
    st.caption(f"For the **saved** settings (ε = {s.epsilon:g}, δ = {s.delta:g}, "
               f"{wb.mechanism_title()}): a change to the form above counts, here and on the "
               "Run page, once you press *Save settings*.")
    m1, m2, m3 = st.columns(3)
    m1.metric("rho-zCDP budget of a run", f"{b['rho']:.4g}")
    planned = wb.planned_rounds()
    m2.metric("Planned rounds", "adaptive" if planned is None else planned)
    m3.metric("Run-time estimate", f"~{secs:.0f} s" if secs < 120 else f"~{secs / 60:.1f} min")
    st.caption(f"Estimate: {how}. It is rough; the Run page shows real progress.")
except Exception as exc:  # noqa: BLE001
    show_error(exc)

whatif_section(wb)

st.page_link(PAGES["run"], label="Next: run", icon=":material/arrow_forward:")
