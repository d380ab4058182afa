!> What the f2py entry `model_query` (fortran/api/api_models.f90) evaluates of a model at
!> given states, outside a time loop: for tests, checks and the start of a run in Python.
!> One flat input x and one flat output out per query (Fortran order, packed in the order
!> below; pyint/models/_fortran_model.py: model_query packs and unpacks them); iarg: the
!> query's integer arguments.  n, mh, mn: the model's sizes.
!>
!>   what                       iarg             x                                          out
!>   QUERY_ITEM              [req]            t, q(n), v(n), w(max(n,mh,mn,1))           one item (<= max(n,mh,mn)*n)
!>   QUERY_RESIDUALS         [nt]             t(nt), q(n,nt), v(n,nt), a(n,nt)           res(5,nt), energy(nt)
!>   QUERY_STRUCTURED        [dflt]           t, q, v, a, lam(mh+mn), coef(6), s         blocks(n,n,7), ops(n,5)
!>   QUERY_CONSISTENT_ACC    [solver]         t, q, v                                    a(n), lam(mh+mn)
!>   QUERY_GALERKIN_SYSTEM   [s, variant]     t, h, q0(n), p0(n), lam0(mn), x(nu)        e(nu), jac(nu,nu)
!>   QUERY_DUAL              []               t, q, p                                    v, hq, hpq, hpp, hqq, hqp
!>   QUERY_CANONICAL         []               t, q, p                                    v, psi, phq, php, psq, psp
!>   QUERY_OUTPUTS           [nt, solver]     t(nt), q(n,nt), v(n,nt)                    q, v, a (n,nt), lam(mh+mn,nt), k
!>
!> QUERY_OUTPUTS: impose_constraints at every sample (variable-step outputs at t_eval,
!> pyint/integrator.py); it stops at the first sample k that fails or where the run control
!> says stop (Ctrl-C, a callback's exception: ierr its status; out's last slot: k, else 0).
!>
!> ierr: 0 ok, STATUS_BAD_INPUT (3) for an unknown query or sizes that do not match,
!> else the status of the routine called (e.g. 1 singular for QUERY_CONSISTENT_ACC).
module pyint_queries
  use pyint_kinds
  use pyint_model
  use pyint_callback_model
  use pyint_newton_matrix
  use pyint_metrics, only: trajectory_residuals
  use pyint_dense_output, only: impose_samples
  use pyint_control, only: stop_status
  use pyint_dual, only: dual_work_t, dual_init, dual_grad, dual_hess
  use pyint_hamiltonian, only: ham_work_t, ham_init, ham_field_jac
  use galerkin, only: gl_work_t, gl_work_init, gl_residual, gl_jacobian
  use pyint_seam, only: QUERY_ITEM, QUERY_RESIDUALS, QUERY_STRUCTURED, &
                        QUERY_CONSISTENT_ACC => QUERY_CONSISTENT_ACCELERATION, QUERY_GALERKIN_SYSTEM, &
                        QUERY_DUAL, QUERY_CANONICAL => QUERY_CANONICAL_FIELD, QUERY_OUTPUTS
  implicit none
  private
  public :: model_query

  !> The query codes: seam/seam.toml's [queries] (pyint_seam; QUERIES in Python).
  public :: QUERY_ITEM, QUERY_RESIDUALS, QUERY_STRUCTURED, QUERY_CONSISTENT_ACC, QUERY_GALERKIN_SYSTEM, &
            QUERY_DUAL, QUERY_CANONICAL, QUERY_OUTPUTS

contains

  subroutine model_query(what, m, iarg, x, out, ierr)
    integer, intent(in) :: what
    class(model_t), allocatable, intent(inout) :: m   !< QUERY_OUTPUTS may reduce a redundant one
    integer, intent(in) :: iarg(:)
    real(wp), intent(in) :: x(:)
    real(wp), intent(out) :: out(:)
    integer, intent(out) :: ierr
    integer :: n, mh, mn, nt, nu, k, nl
    n = m%n; mh = m%mh; mn = m%mn
    out = 0
    ierr = STATUS_BAD_INPUT
    select case (what)
    case (QUERY_ITEM)
      if (size(iarg) < 1 .or. size(x) /= 1 + 2 * n + max(n, mh, mn, 1) .or. size(out) < max(n, mh, mn) * n) return
      call item(m, iarg(1), x(1), x(2:n + 1), x(n + 2:2 * n + 1), x(2 * n + 2:), out, ierr)
    case (QUERY_RESIDUALS)
      if (size(iarg) < 1) return
      nt = iarg(1)
      if (nt < 1 .or. size(x) /= nt * (1 + 3 * n) .or. size(out) /= 6 * nt) return
      call residuals(m, nt, x(1:nt), x(nt + 1:nt * (1 + n)), x(nt * (1 + n) + 1:nt * (1 + 2 * n)), &
                     x(nt * (1 + 2 * n) + 1:), out(1:5 * nt), out(5 * nt + 1:))
      ierr = 0
    case (QUERY_STRUCTURED)
      if (size(iarg) < 1 .or. size(x) /= 3 * n + mh + mn + 8 .or. size(out) /= 7 * n * n + 5 * n &
          .or. mh > n .or. mn > n) return
      call structured(m, iarg(1), x(1), x(2:n + 1), x(n + 2:2 * n + 1), x(2 * n + 2:3 * n + 1), &
                      x(3 * n + 2:3 * n + 1 + mh), x(3 * n + 2 + mh:3 * n + 1 + mh + mn), &
                      x(3 * n + 2 + mh + mn:3 * n + 7 + mh + mn), x(size(x)), out(1:7 * n * n), out(7 * n * n + 1:))
      ierr = 0
    case (QUERY_OUTPUTS)
      if (size(iarg) < 2) return
      nt = iarg(1)
      nl = mh + mn
      if (nt < 1 .or. size(x) /= nt * (1 + 2 * n) .or. size(out) /= nt * (3 * n + nl) + 1) return
      block
        real(wp), allocatable :: q(:, :), v(:, :), a(:, :), lm(:, :)
        allocate(a(n, nt), lm(nl, nt))
        q = reshape(x(nt + 1:nt * (1 + n)), [n, nt])
        v = reshape(x(nt * (1 + n) + 1:), [n, nt])
        call impose_samples(m, x(1:nt), q, v, iarg(2), a, lm, ierr, k)
        out(1:n * nt) = reshape(q, [n * nt])
        out(n * nt + 1:2 * n * nt) = reshape(v, [n * nt])
        out(2 * n * nt + 1:3 * n * nt) = reshape(a, [n * nt])
        out(3 * n * nt + 1:3 * n * nt + nl * nt) = reshape(lm, [nl * nt])
        out(size(out)) = k
      end block
    case (QUERY_CONSISTENT_ACC)
      if (size(iarg) < 1 .or. size(x) /= 1 + 2 * n .or. size(out) /= n + mh + mn) return
      call consistent_acceleration(m, x(1), x(2:n + 1), x(n + 2:), iarg(1), out(1:n), out(n + 1:), ierr)
    case (QUERY_GALERKIN_SYSTEM)
      nu = size(x) - 2 - 2 * n - mn
      if (size(iarg) < 2 .or. nu < 1 .or. size(out) /= nu + nu * nu) return
      call galerkin_system(m, iarg(1), iarg(2), x(1), x(2), x(3:n + 2), x(n + 3:2 * n + 2), &
                           x(2 * n + 3:2 * n + 2 + mn), x(2 * n + 3 + mn:), nu, out(1:nu), out(nu + 1:), ierr)
    case (QUERY_DUAL, QUERY_CANONICAL)
      if (size(x) /= 1 + 2 * n .or. size(out) /= 2 * n + 4 * n * n) return
      call dual_or_canonical(m, what == QUERY_DUAL, x(1), x(2:n + 1), x(n + 2:), out(1:n), out(n + 1:2 * n), &
                             out(2 * n + 1:2 * n + n * n), out(2 * n + n * n + 1:2 * n + 2 * n * n), &
                             out(2 * n + 2 * n * n + 1:2 * n + 3 * n * n), out(2 * n + 3 * n * n + 1:), ierr)
    end select
  end subroutine model_query

  !> One model item (request code req, fortran/core/callback_model.f90) at (t, q, v, w)
  !> (mass_dqq(q, a, w) with a = v);
  !> a matrix item (rows x n) is evaluated into a and stored in Fortran order.
  subroutine item(m, req, t, q, v, w, out, ierr)
    class(model_t), intent(in) :: m
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(inout) :: out(:)
    integer, intent(out) :: ierr
    real(wp), allocatable :: a(:, :), b(:, :)
    integer :: n, mh, mn, rows
    n = m%n; mh = m%mh; mn = m%mn
    allocate(a(n, n), b(n, n))
    ierr = 0
    rows = 0
    select case (req)
    case (REQ_MASS);      call m%mass(q, a); rows = n
    case (REQ_MASS_DQ);   call m%mass_dq(q, w(1:n), a); rows = n
    case (REQ_MASS_DQQ);  call m%mass_dqq(q, v, w(1:n), a); rows = n
    case (REQ_FORCE);     call m%force(t, q, v, out(1:n))
    case (REQ_FORCE_Q);   call m%force_jac(t, q, v, a, b); rows = n
    case (REQ_FORCE_V);   call m%force_jac(t, q, v, b, a); rows = n
    case (REQ_HOL);       call m%hol(t, q, out(1:mh))
    case (REQ_HOL_JAC);   call m%hol_jac(t, q, a(1:mh, :)); rows = mh
    case (REQ_HOL_T);     call m%hol_t(t, q, out(1:mh))
    case (REQ_HOL_VEL_Q); call m%hol_vel_q(t, q, v, a(1:mh, :)); rows = mh
    case (REQ_HOL_GAMMA); call m%hol_gamma(t, q, v, out(1:mh))
    case (REQ_HOL_GTL_Q); call m%hol_gtl_q(t, q, w(1:mh), a); rows = n
    case (REQ_NH_A);      call m%nh(t, q, a(1:mn, :), b(1:mn, 1)); rows = mn
    case (REQ_NH_B);      call m%nh(t, q, a(1:mn, :), out(1:mn))
    case (REQ_NH_VEL_Q);  call m%nh_vel_q(t, q, v, a(1:mn, :)); rows = mn
    case (REQ_NH_GAMMA);  call m%nh_gamma(t, q, v, out(1:mn))
    case (REQ_NH_ATL_Q);  call m%nh_atl_q(t, q, w(1:mn), a); rows = n
    case (REQ_ENERGY);    out(1) = m%energy(t, q, v)
    case default;         ierr = STATUS_BAD_INPUT
    end select
    if (rows > 0) out(1:rows * n) = reshape(a(1:rows, :), [rows * n])
  end subroutine item

  !> Constraint residuals (|g|, |Gv+g_t|, |Ga+gamma_h|, |Av+b|, |Aa+gamma_n|) and energy along a trajectory.
  subroutine residuals(m, nt, t, q, v, a, res, energy)
    class(model_t), intent(in) :: m
    integer, intent(in) :: nt
    real(wp), intent(in) :: t(nt), q(m%n, nt), v(m%n, nt), a(m%n, nt)
    real(wp), intent(inout) :: res(5, nt), energy(nt)
    call trajectory_residuals(m, t, q, v, a, res, energy)
  end subroutine residuals

  !> The structured hooks of a model at (t, q, v, a, lam = [lh; ln]), evaluated by the
  !> model's own procedures (dflt = 0) or by the dense defaults of model_t (dflt = 1), for
  !> comparing the two.  blocks(:, :, k) (n x n, the block in its top-left corner) holds:
  !>   1 add_qq with coefficients coef(1:6)   2 add_hol_jac (s G)     3 add_hol_jac (s G^T)
  !>   4 add_hol_vel_q (s (G v)_q)           5 add_nh_jac (s A)      6 add_nh_jac (s A^T)
  !>   7 add_nh_vel_q (s (A v + b)_q)
  !> ops(:, k): 1 mass_mul(a), 2 hol_vel(v), 3 hol_jac_tmul(lh), 4 nh_vel(v), 5 nh_jac_tmul(ln)
  !> (first mh / mn entries where the result is that long).
  subroutine structured(m, dflt, t, q, v, a, lh, ln, coef, s, blocks, ops)
    class(model_t), intent(in) :: m
    integer, intent(in) :: dflt
    real(wp), intent(in) :: t, q(m%n), v(m%n), a(m%n), lh(m%mh), ln(m%mn), coef(6), s
    real(wp), intent(inout) :: blocks(m%n, m%n, 7), ops(m%n, 5)
    type(newton_matrix_t) :: nm
    real(wp), allocatable :: gq(:, :), an(:, :)
    integer :: e, k, n, mh, mn
    n = m%n; mh = m%mh; mn = m%mn
    do k = 1, 7
      call nm%record(n)
      call nm%setup(SOLVER_DENSE, e)
      call nm%zero()
      if (dflt == 0) then
        select case (k)
        case (1); call m%add_qq(t, q, v, a, lh, ln, coef, nm, 0, 0)
        case (2); call m%add_hol_jac(t, q, s, .false., nm, 0, 0)
        case (3); call m%add_hol_jac(t, q, s, .true., nm, 0, 0)
        case (4); call m%add_hol_vel_q(t, q, v, s, nm, 0, 0)
        case (5); call m%add_nh_jac(t, q, s, .false., nm, 0, 0)
        case (6); call m%add_nh_jac(t, q, s, .true., nm, 0, 0)
        case (7); call m%add_nh_vel_q(t, q, v, s, nm, 0, 0)
        end select
      else
        select case (k)
        case (1); call default_add_qq(m, t, q, v, a, lh, ln, coef, nm, 0, 0)
        case (2); call default_add_hol_jac(m, t, q, s, .false., nm, 0, 0)
        case (3); call default_add_hol_jac(m, t, q, s, .true., nm, 0, 0)
        case (4); call default_add_hol_vel_q(m, t, q, v, s, nm, 0, 0)
        case (5); call default_add_nh_jac(m, t, q, s, .false., nm, 0, 0)
        case (6); call default_add_nh_jac(m, t, q, s, .true., nm, 0, 0)
        case (7); call default_add_nh_vel_q(m, t, q, v, s, nm, 0, 0)
        end select
      end if
      blocks(:, :, k) = nm%a
    end do
    if (dflt == 0) then
      call m%mass_mul(q, a, ops(:, 1))
      call m%hol_vel(t, q, v, ops(1:mh, 2))
      call m%hol_jac_tmul(t, q, lh, ops(:, 3))
      call m%nh_vel(t, q, v, ops(1:mn, 4))
      call m%nh_jac_tmul(t, q, ln, ops(:, 5))
    else
      call default_mass_mul(m, q, a, ops(:, 1))
      allocate(gq(mh, n))
      call m%hol_jac(t, q, gq)
      call m%hol_t(t, q, ops(1:mh, 2))
      ops(1:mh, 2) = ops(1:mh, 2) + matmul(gq, v)
      call default_hol_jac_tmul(m, t, q, lh, ops(:, 3))
      allocate(an(mn, n))
      call m%nh(t, q, an, ops(1:mn, 4))
      ops(1:mn, 4) = ops(1:mn, 4) + matmul(an, v)
      call default_nh_jac_tmul(m, t, q, ln, ops(:, 5))
    end if
  end subroutine structured

  !> Residual e(x) and Newton matrix jac = de/dx of one step of the degree-s Galerkin-Lobatto
  !> method (fortran/galerkin.f90) from (t, q0, P0, lam0) with step h, at the unknowns x
  !> (q_1..q_s, phat_0..phat_s, P_s, lam_1..lam_s[, lam_0 for variant 1]).
  subroutine galerkin_system(m, s, variant, t, h, q0, p0, lam0, x, nu, e, jac, ierr)
    class(model_t), intent(in) :: m
    integer, intent(in) :: s, variant, nu
    real(wp), intent(in) :: t, h, q0(:), p0(:), lam0(:), x(nu)
    real(wp), intent(inout) :: e(nu), jac(nu, nu)
    integer, intent(out) :: ierr
    type(gl_work_t) :: w
    call gl_work_init(w, m, s, variant, q0, ierr)
    if (ierr /= 0) return
    if (nu /= w%nx) then
      ierr = STATUS_BAD_INPUT
      return
    end if
    w%x = x
    call gl_residual(m, t, h, q0, p0, lam0, w, ierr)
    if (ierr == 0) call gl_jacobian(m, t, h, w, ierr)
    e = w%e
    jac = w%jac
  end subroutine galerkin_system

  !> At (t, q, p): the dual-variable form (fortran/core/dual_form.f90; dual) v = H_p, g = H_q
  !> and the Jacobians j1..j4 = dH_p/dq, dH_p/dp, dH_q/dq, dH_q/dp, or the canonical field
  !> (fortran/core/hamiltonian.f90) v = phi = M^{-1} p, g = psi = f + (M v)_q v and
  !> j1..j4 = phi_q, phi_p, psi_q, psi_p.
  subroutine dual_or_canonical(m, dual, t, q, p, v, g, j1, j2, j3, j4, ierr)
    class(model_t), intent(in) :: m
    logical, intent(in) :: dual
    real(wp), intent(in) :: t, q(:), p(:)
    real(wp), intent(inout) :: v(m%n), g(m%n), j1(m%n, m%n), j2(m%n, m%n), j3(m%n, m%n), j4(m%n, m%n)
    integer, intent(out) :: ierr
    type(dual_work_t) :: dw
    type(ham_work_t) :: hw
    if (dual) then
      call dual_init(dw, m, q, ierr)
      if (ierr == 0) call dual_grad(m, t, q, p, dw, v, g, ierr)
      if (ierr == 0) call dual_hess(m, t, q, p, dw, j1, j2, j3, j4, ierr)
    else
      call ham_init(hw, m, q, ierr)
      if (ierr == 0) call ham_field_jac(m, hw, t, q, p, v, g, j1, j2, j3, j4, ierr)
    end if
  end subroutine dual_or_canonical

end module pyint_queries
