!> Outputs of a variable-step run at given times t_eval, computed inside the run's one call as
!> RADAU5's CONTR5 serves SOLOUT (Hairer, Wanner, Solving ODEs II, IV.8): the state at each time
!> by Hermite interpolation over the accepted step holding it, then re-imposed onto the
!> constraints as pyint.reference does at its outputs (model.f90: impose_constraints).
!>   DENSE_CUBIC        cubic Hermite in (q, v), v its derivative: O(h^4) in q, O(h^3) in v;
!>   DENSE_CUBIC_QDDOT  q so, v by cubic Hermite in (v, a) (a = qddot at the samples): O(h^4);
!>   DENSE_QUINTIC      quintic Hermite in (q, v, a), v its derivative: O(h^6), O(h^5)
!> (docs/adaptive_steps.md section 5; Hairer, Norsett, Wanner, Solving ODEs I, II.6);
!>   DENSE_LIE          rigid bodies on (R^3 x SO(3))^nb (the Lie-group steppers, nq = 12 nb /= nv):
!>                      x and V by cubic Hermite, R_i = R_n,i expm(psi(theta)) with psi a cubic
!>                      Hermite in the Lie algebra (lie_hermite_state: O(h^4) in x, R and V), then
!>                      projected onto Phi = 0 and B V = 0 on the run's kept rows
!>                      (fortran/core/rigid_body.f90: rigid_project), Vdot and lam from the
!>                      index-1 system there (lie_dense_outputs; docs/adaptive_steps.md section 8.4).
module pyint_dense_output
  use pyint_kinds
  use pyint_model, only: model_t, impose_constraints
  use pyint_reduced_model, only: drop_redundant_rows
  use pyint_control, only: stop_status
  use pyint_callback_model, only: usercb_i
  use pyint_registry, only: setup_model
  use pyint_metrics, only: trajectory_residuals, NRES_VECTOR
  use pyint_newton_matrix, only: SOLVER_AUTO
  use pyint_rigid, only: rigid_system_t, rigid_system_new, rigid_keep_rows, rigid_project, rigid_consistent_acc, &
                         rigid_sample_residuals, PROJECT_SINGULAR
  use pyint_so3, only: expm, logm, tangent
  use pyint_linalg, only: lu_factor_solve
  use pyint_lie_stepper, only: lie_unpack, lie_pack
  ! the modes and lie_dense_outputs' failure of a step whose rotation is ambiguous (lie_hermite_state),
  ! named in seam/seam.toml
  use pyint_seam, only: DENSE_CUBIC, DENSE_CUBIC_QDDOT, DENSE_QUINTIC, DENSE_LIE, DENSE_AMBIGUOUS_ROTATION
  implicit none
  private
  public :: dense_outputs, hermite_states, impose_samples, lie_dense_outputs, DENSE_CUBIC, DENSE_CUBIC_QDDOT, &
            DENSE_QUINTIC, DENSE_LIE, DENSE_AMBIGUOUS_ROTATION

contains

  !> The outputs at te of a successful vector-state run whose samples (the accepted steps) are
  !> (t, q, v, a), for the model block (model_id, ipar, rpar, usercb, n, mh, mn, mflags) of the
  !> run: dense(:, j) = [q, v, a, lam (mh + mn), the residuals (NRES_VECTOR), the energy] at te(j).
  !> The re-imposition has a model of its own (impose_samples may reduce a redundant one); the
  !> residuals are measured on the model as given.  info: 0, or the status of the sample kfail
  !> that failed (impose_samples; the outputs are then incomplete).
  subroutine dense_outputs(mode, model_id, ipar, rpar, usercb, n, mh, mn, mflags, t, q, v, a, te, dense, &
                           info, kfail)
    integer, intent(in) :: mode, model_id, n, mh, mn, ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:), t(:), q(:, :), v(:, :), a(:, :), te(:)
    procedure(usercb_i) :: usercb
    real(wp), intent(inout) :: dense(:, :)
    integer, intent(out) :: info, kfail
    class(model_t), allocatable :: m
    integer :: nl
    nl = mh + mn
    kfail = 1
    info = STATUS_BAD_INPUT
    if (size(t) < 2 .or. size(dense, 1) /= 3 * n + nl + NRES_VECTOR + 1 .or. size(q, 1) /= n) return
    associate (qe => dense(1:n, :), ve => dense(n + 1:2 * n, :), ae => dense(2 * n + 1:3 * n, :), &
               le => dense(3 * n + 1:3 * n + nl, :), re => dense(3 * n + nl + 1:3 * n + nl + NRES_VECTOR, :), &
               ee => dense(size(dense, 1), :))
      call hermite_states(mode, t, q, v, a, te, qe, ve)
      call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, info)
      if (info /= 0) return
      call impose_samples(m, te, qe, ve, SOLVER_AUTO, ae, le, info, kfail)
      if (info /= 0) return
      deallocate(m)
      call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, info)
      if (info /= 0) return
      call trajectory_residuals(m, te, qe, ve, ae, re, ee)
    end associate
  end subroutine

  !> qe(:, j), ve(:, j) at te(j) from the samples (t, q, v, a) (t increasing, at least two): over
  !> the step [t(k), t(k+1)] with t(k) < te(j) <= t(k+1) (the first step for te(j) <= t(1), the
  !> last beyond t(size(t))); te nondecreasing.  Powers above 2 through pow, as NumPy evaluates them.
  subroutine hermite_states(mode, t, q, v, a, te, qe, ve)
    integer, intent(in) :: mode
    real(wp), intent(in) :: t(:), q(:, :), v(:, :), a(:, :), te(:)
    real(wp), intent(out) :: qe(:, :), ve(:, :)
    real(wp) :: h, th, t2, t3, t4, t5, b(6), d(6)
    integer :: j, k, nt
    nt = size(t)
    k = 1
    do j = 1, size(te)              ! te nondecreasing (checked by the caller): k only moves on
      do while (k < nt - 1 .and. t(k + 1) < te(j))     ! the first k + 1 with t(k + 1) >= te(j)
        k = k + 1
      end do
      h = t(k + 1) - t(k)
      th = (te(j) - t(k)) / h
      t2 = th * th
      t3 = th**3.0_wp
      if (mode == DENSE_QUINTIC) then
        t4 = th**4.0_wp
        t5 = th**5.0_wp
        b = [1 - 10 * t3 + 15 * t4 - 6 * t5, th - 6 * t3 + 8 * t4 - 3 * t5, (t2 - 3 * t3 + 3 * t4 - t5) / 2, &
             10 * t3 - 15 * t4 + 6 * t5, -4 * t3 + 7 * t4 - 3 * t5, (t3 - 2 * t4 + t5) / 2]
        d = [-30 * t2 + 60 * t3 - 30 * t4, 1 - 18 * t2 + 32 * t3 - 15 * t4, (2 * th - 9 * t2 + 12 * t3 - 5 * t4) / 2, &
             30 * t2 - 60 * t3 + 30 * t4, -12 * t2 + 28 * t3 - 15 * t4, (3 * t2 - 8 * t3 + 5 * t4) / 2]
        qe(:, j) = b(1) * q(:, k) + b(2) * h * v(:, k) + b(3) * (h * h * a(:, k)) + b(4) * q(:, k + 1) &
                   + b(5) * h * v(:, k + 1) + b(6) * (h * h * a(:, k + 1))
        ve(:, j) = (d(1) * q(:, k) + d(2) * h * v(:, k) + d(3) * (h * h * a(:, k)) + d(4) * q(:, k + 1) &
                    + d(5) * h * v(:, k + 1) + d(6) * (h * h * a(:, k + 1))) / h
      else
        b(1:4) = [2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + th, -2 * t3 + 3 * t2, t3 - t2]
        qe(:, j) = b(1) * q(:, k) + b(2) * h * v(:, k) + b(3) * q(:, k + 1) + b(4) * h * v(:, k + 1)
        if (mode == DENSE_CUBIC_QDDOT) then
          ve(:, j) = b(1) * v(:, k) + b(2) * h * a(:, k) + b(3) * v(:, k + 1) + b(4) * h * a(:, k + 1)
        else
          d(1:4) = [6 * t2 - 6 * th, 3 * t2 - 4 * th + 1, -6 * t2 + 6 * th, 3 * t2 - 2 * th]
          ve(:, j) = (d(1) * q(:, k) + d(2) * h * v(:, k) + d(3) * q(:, k + 1) + d(4) * h * v(:, k + 1)) / h
        end if
      end if
    end do
  end subroutine

  !> (q, v) at the times t re-imposed onto the constraints in place, a and lam from the index-1
  !> system there (model.f90: impose_constraints; lam zero on the rows a redundant mechanism drops
  !> at the first sample, as the driver's start does).  It stops at the first sample kfail that
  !> fails or where the run control says stop (Ctrl-C, a callback's exception): info its status;
  !> kfail = 0 when every sample passed (kfail = 1, info /= 0: the rank check failed).
  subroutine impose_samples(m, t, q, v, solver, a, lam, info, kfail)
    class(model_t), allocatable, intent(inout) :: m
    real(wp), intent(in) :: t(:)
    real(wp), intent(inout) :: q(:, :), v(:, :)
    integer, intent(in) :: solver
    real(wp), intent(out) :: a(:, :), lam(:, :)
    integer, intent(out) :: info, kfail
    integer, allocatable :: rows(:)
    real(wp) :: lk(m%mh + m%mn)
    integer :: k, nl
    a = 0
    lam = 0
    kfail = 1
    nl = m%mh + m%mn
    call drop_redundant_rows(m, t(1), q(:, 1), v(:, 1), rows, info)
    if (info /= 0) return
    if (.not. allocated(rows)) rows = [(k, k = 1, nl)]
    do k = 1, size(t)
      call impose_constraints(m, t(k), q(:, k), v(:, k), solver, a(:, k), lk(1:size(rows)), info)
      lam(rows, k) = lk(1:size(rows))
      if (info == 0) info = stop_status()
      if (info /= 0) then
        kfail = k
        return
      end if
    end do
    kfail = 0
  end subroutine

  !> The outputs at te of a successful Lie-group run on the rigid system (ipar, rpar)
  !> (fortran/core/rigid_body.f90) whose samples (the accepted steps) are (t, q, v, a = Vdot), q
  !> packed as the Lie steppers keep it (lie_stepper.f90: 12 per body, x then R by rows), red(i) = 1
  !> on the joint rows the run dropped as redundant (driver.f90: redundant_flags):
  !> dense(:, j) = [q, V, Vdot, lam (every row, zero on the dropped ones), the residuals (|Phi|,
  !> |B V|, |B A + Bdot V|, max_i |R_i^T R_i - I|_F, over every row), the energy] at te(j) (nondecreasing).
  !> Each output: lie_hermite_state on the step holding it (chosen as hermite_states chooses), then
  !> re-imposed as a start is projected (rigid_project on the kept rows, tol = 0: at least one
  !> Gauss-Newton step), Vdot and lam from the index-1 system [M B^T; B 0] of the kept rows.
  !> info: 0, or at the output kfail: PROJECT_SINGULAR (a singular B M^-1 B^T or index-1 matrix),
  !> rigid_project's other failures, DENSE_AMBIGUOUS_ROTATION (of body `body`, 0-based, on the step
  !> [t(kstep), t(kstep + 1)]), or the run control's stop (Ctrl-C); kfail = 0 when every output passed.
  subroutine lie_dense_outputs(ipar, rpar, red, t, q, v, a, te, dense, info, kfail, body, kstep)
    integer, intent(in) :: ipar(:), red(:)
    real(wp), intent(in) :: rpar(:), t(:), q(:, :), v(:, :), a(:, :), te(:)
    real(wp), intent(inout) :: dense(:, :)
    integer, intent(out) :: info, kfail
    integer, intent(out), optional :: body, kstep
    type(rigid_system_t) :: s
    integer :: j, k, nt, nq, nv, nl, i, b
    kfail = 1
    if (present(body)) body = -1
    if (present(kstep)) kstep = 0
    call rigid_system_new(ipar, rpar, s, info)
    if (info /= 0) then
      info = STATUS_BAD_INPUT
      return
    end if
    nq = 12 * s%nb; nv = s%nv; nl = s%mall; nt = size(t)
    info = STATUS_BAD_INPUT
    if (nt < 2 .or. size(red) < nl .or. size(q, 1) /= nq .or. size(v, 1) /= nv .or. size(a, 1) /= nv &
        .or. size(dense, 1) /= nq + 2 * nv + nl + 5 .or. size(dense, 2) < size(te)) return
    if (any(red(1:nl) /= 0)) call rigid_keep_rows(s, pack([(i, i = 1, nl)], red(1:nl) == 0))
    k = 1
    do j = 1, size(te)
      do while (k < nt - 1 .and. t(k + 1) < te(j))     ! the step hermite_states takes
        k = k + 1
      end do
      kfail = j
      call one(j, k, info)
      if (info == 0) info = stop_status()
      if (info /= 0) return
    end do
    kfail = 0

  contains

    subroutine one(j, k, info)
      integer, intent(in) :: j, k
      integer, intent(out) :: info
      real(wp) :: x(3, s%nb), r(3, 3, s%nb), lk(s%m)
      associate (qe => dense(1:nq, j), ve => dense(nq + 1:nq + nv, j), ae => dense(nq + nv + 1:nq + 2 * nv, j), &
                 le => dense(nq + 2 * nv + 1:nq + 2 * nv + nl, j), &
                 re => dense(nq + 2 * nv + nl + 1:nq + 2 * nv + nl + 4, j))
        call lie_hermite_state(s%nb, t(k), t(k + 1), q(:, k), q(:, k + 1), v(:, k), v(:, k + 1), a(:, k), &
                               a(:, k + 1), te(j), x, r, ve, b)
        if (b >= 0) then
          info = DENSE_AMBIGUOUS_ROTATION
          if (present(body)) body = b
          if (present(kstep)) kstep = k
          return
        end if
        call rigid_project(s, x, r, ve, 0.0_wp, 0.0_wp, info)
        if (info /= 0) return
        call rigid_consistent_acc(s, r, ve, ae, lk, info)
        if (info /= 0) then
          info = PROJECT_SINGULAR
          return
        end if
        le = 0
        if (allocated(s%keep)) then
          le(s%keep) = lk
        else
          le = lk
        end if
        call lie_pack(x, r, qe)
        call rigid_sample_residuals(s, x, r, ve, ae, re, dense(size(dense, 1), j))
      end associate
    end subroutine

  end subroutine

  !> The state at te in the step [t0, t1] from the samples (q0, V0, A0) and (q1, V1, A1) of nb rigid
  !> bodies (q packed 12 per body, A = Vdot), theta = (te - t0) / h:
  !>   x by cubic Hermite in (x, xdot = v world);
  !>   R_i = R_0,i expm(psi(theta)), psi the cubic Hermite in the Lie algebra with psi(0) = 0,
  !>   psi(1) = log(R_0,i^T R_1,i), psi'(0) = h Omega_0,i, psi'(1) = h dexp^-1_psi(1) Omega_1,i
  !>   (tangent T: expm(psi + d) = expm(psi) expm(T d), so Omega = T(psi) psi' / h), the branch of
  !>   the log nearest the step's rotation by the trapezoidal rule pred = h (Omega_0 + Omega_1) / 2
  !>   (a step may turn beyond pi): u (|psi| + 2 pi k) for the principal log u |psi|;
  !>   V by cubic Hermite in (V, Vdot).
  !> O(h^4) in x, R and V against exact samples (the cubic Hermite in the algebra of a curve
  !> R_0 expm(psi(theta)): Hairer, Lubich, Wanner, Geometric Numerical Integration, IV.8; the end
  !> slope through dexp^-1 is what makes R fourth order: docs/adaptive_steps.md section 8.4).
  !> ambiguous: -1, or the first body (0-based) whose branch lies farther than pi/2 from pred (its
  !> rotation in the step is ambiguous; R then incomplete).
  subroutine lie_hermite_state(nb, t0, t1, q0, q1, v0, v1, a0, a1, te, x, r, ve, ambiguous)
    integer, intent(in) :: nb
    real(wp), intent(in) :: t0, t1, q0(:), q1(:), v0(:), v1(:), a0(:), a1(:), te
    real(wp), intent(out) :: x(3, nb), r(3, 3, nb), ve(:)
    integer, intent(out) :: ambiguous
    real(wp), parameter :: PI = acos(-1.0_wp)
    real(wp) :: h, th, t2, t3, c(4), x0(3, nb), r0(3, 3, nb), x1(3, nb), r1(3, 3, nb), psi(3), pred(3), &
                dpsi(3), tm(3, 3), n
    integer :: i, ipiv(3), info
    h = t1 - t0
    th = (te - t0) / h
    t2 = th * th
    t3 = th**3.0_wp
    c = [2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + th, -2 * t3 + 3 * t2, t3 - t2]
    call lie_unpack(q0, x0, r0)
    call lie_unpack(q1, x1, r1)
    ambiguous = -1
    do i = 1, nb
      associate (w0 => v0(6 * i - 5:6 * i), w1 => v1(6 * i - 5:6 * i))
        x(:, i) = c(1) * x0(:, i) + c(2) * h * w0(1:3) + c(3) * x1(:, i) + c(4) * h * w1(1:3)
        psi = logm(matmul(transpose(r0(:, :, i)), r1(:, :, i)))
        pred = h * (w0(4:6) + w1(4:6)) / 2
        n = norm2(psi)
        if (n > 0) psi = psi / n * (n + 2 * PI * anint((dot_product(psi / n, pred) - n) / (2 * PI)))
        if (norm2(psi - pred) > PI / 2) then
          ambiguous = i - 1
          return
        end if
        tm = tangent(psi)
        dpsi = h * w1(4:6)
        call lu_factor_solve(tm, ipiv, dpsi, info)
        r(:, :, i) = matmul(r0(:, :, i), expm(c(2) * h * w0(4:6) + c(3) * psi + c(4) * dpsi))
      end associate
    end do
    ve = c(1) * v0 + c(2) * h * a0 + c(3) * v1 + c(4) * h * a1
  end subroutine

end module pyint_dense_output
