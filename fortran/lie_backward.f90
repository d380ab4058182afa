!> Backward differences + Crouch-Grossman on (R^3 x SO(3))^nb (seed 001, eqs. (7)-(10)):
!> the index-3, index-2, index-1 and stabilized (DAES) forms of the rigid-body DAE.
!>
!> One step from (x^k, R^k, V^k) with the new driving velocity W = V'^{k+1}:
!>   x^{k+1} = x^k + h w_v,   R^{k+1} = R^k expm(h w_Omega)            (7), (9)
!>   M (W - V_h)/h + B(q^{k+1})^T lam - Q(W) = 0                        (8), (10)
!> closed by one constraint level at q^{k+1}:
!>   DAE3:  Phi(q^{k+1}) = 0
!>   DAE2:  B(q^{k+1}) W = 0
!>   DAE1:  B(q^{k+1}) (W - V^k)/h + Bdot(q^{k+1}, W) W = 0
!>   DAES:  Phi(q^{k+1}) = 0 for (W, lam), then the rest of eq. (10):
!>          V^{k+1} = W + P B^T mu,                 B V^{k+1} = 0
!>          A^{k+1} = (W - V_h)/h + P B^T omega,    B A^{k+1} + Bdot V^{k+1} = 0.
!> (10) as printed has V'^k where V^{k+1} must stand in its first row and
!> primes on its last two rows; only this reading is square (see README).
!> Its Jacobian is block lower-triangular: the (W, lam) block is iterated by
!> Newton, the (V, mu) and (A, omega) blocks are linear in their unknowns
!> and are solved exactly at the converged q^{k+1}.
!> V_h, the velocity the backward difference starts from, is V^k for DAE1-3.
!> DAES, history_mode 0 ("printed"): V_h = V'^k and P = I, eq. (10) as printed
!>   (q and V' are then exactly those of DAE3; V, A are projections of them).
!> DAES, history_mode 1 ("projected"): V_h = V^k, the projected velocity, and
!>   P = M^-1 (M-orthogonal projections); the reported multiplier is lam - omega,
!>   which with P = M^-1 solves the index-1 system at (q^{k+1}, V^{k+1}).  Feeding
!>   back a Euclidean (P = I) projection is inconsistent: it changes the momentum
!>   tangentially by O(h) per step and the error stays O(1) as h -> 0 (measured).
!> The reported acceleration of DAE1-3 is A^{k+1} = (V^{k+1} - V^k)/h (eq. (8)).
!>
!> Newton unknowns z = (W, h lam); the residual rows are
!>   M (W - V_h) + B^T (h lam) - h Q(W)           (momentum units)
!>   Phi/h (DAE3, DAES),  B W (DAE2),  B (W - V^k) + h Bdot W (DAE1)   (velocity units)
!> and the Jacobian is exact: with P = d(q^{k+1})/dW = h diag(I, T(h Omega_i)),
!>   [ M - h Q_V + (B^T h lam)_q P    B^T ]
!>   [ d(constraint row)/dW           0   ].
!> Above SMALL_MAX unknowns it is assembled from the joints' blocks (bd_assemble), and DAES's
!> projections are solved as [P^-1 B^T; B 0] on them (daes_project).
!> Termination: the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90), in the Lie steppers' one Newton iteration
!> (fortran/core/lie_stepper.f90); groups at bd_measure.
module lie_backward
  use pyint_kinds
  use pyint_linalg, only: lu_factor, lu_solve
  use pyint_newton_matrix, only: newton_matrix_t
  use pyint_rigid
  use pyint_newton_control, only: maxabs, NEWTON_FLOOR
  use pyint_driver, only: state_t
  use pyint_lie_stepper, only: lie_stepper_t, lie_work_init, lie_pack, lie_structure_record, lie_structure_setup, &
                               lie_tangents, lie_add_mass, lie_add_force_v, lie_add_vv, lie_add_mv, lie_add_vm, &
                               lie_add_identity, lie_mass_times, lie_b_times, lie_bt_times
  use pyint_seam, only: NSTATS_LIE_BACKWARD, NIOPT_LIE_BACKWARD, NROPT_LIE_BACKWARD, IOPT_LIE_BACKWARD_FORM, &
                        IOPT_LIE_BACKWARD_HISTORY, IOPT_LIE_BACKWARD_MAXIT, ROPT_LIE_BACKWARD_TOL, &
                        IOPT_LIE_BACKWARD_LINEAR_SOLVER, STAT_LIE_BACKWARD_LINEAR_SOLVER, &
                        LIE_BACKWARD_FORM_DAE1, LIE_BACKWARD_FORM_DAE2, LIE_BACKWARD_FORM_DAE3, LIE_BACKWARD_FORM_DAES
  implicit none
  private
  public :: lie_backward_stepper_t, FORM_DAE1, FORM_DAE2, FORM_DAE3, FORM_DAES

  integer, parameter :: FORM_DAE1 = LIE_BACKWARD_FORM_DAE1, FORM_DAE2 = LIE_BACKWARD_FORM_DAE2, &
                        FORM_DAE3 = LIE_BACKWARD_FORM_DAE3, FORM_DAES = LIE_BACKWARD_FORM_DAES

  !> The stepper of the one driver (fortran/core/driver.f90, fortran/core/lie_stepper.f90).
  !> iopt = [form, history_mode, maxit], ropt = [tol] (form: 1 DAE1, 2 DAE2, 3 DAE3, 4 DAES;
  !> history_mode (DAES): 0 printed V'^k, 1 projected V^k; h > 0).  The auxiliary vector per
  !> sample (DAES only): (V', mu, omega).  stats = [Newton iterations, factorizations, max
  !> iterations in a step].  Its Newton blocks besides the common ones (self%w): B(q^{k+1}) (bm),
  !> Bdot V (g) and the DAE1 blocks kmv2, kmv3.
  type, extends(lie_stepper_t) :: lie_backward_stepper_t
    integer :: form = FORM_DAE3, history_mode = 0
    real(wp), allocatable :: pw(:, :), vp(:), mu(:), om(:)
    real(wp), allocatable :: bm(:, :), kmv2(:, :), kmv3(:, :), g(:)
    !> DAES with the structured Newton matrix: its projections' matrix [P^-1 B^T; B 0] (daes_project)
    type(newton_matrix_t) :: pm
  contains
    procedure :: init => lbd_init
    procedure :: step => lbd_step
    procedure :: aux => lbd_aux
    procedure :: newton_eval => bd_eval
    procedure :: newton_measure => bd_measure
    procedure :: residual_at_floor => bd_floor
    procedure :: finish => lbd_finish
  end type

contains

  !> Residual and Newton matrix at the iterate w%z; u = V^k, u2 = V_h.
  subroutine bd_eval(self, h, u, u2)
    class(lie_backward_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    integer :: nv, m
    associate (s => self%sys, form => self%form, x => self%x, r => self%r, w => self%w, vk => u, vh => u2)
      nv = w%nv; m = w%m
      associate (wv => w%z(1:nv), hl => w%z(nv + 1:), rd => w%res(1:nv), rc => w%res(nv + 1:))
        w%psi = h * wv
        call rigid_advance(s, x, r, w%psi, w%x1, w%r1)
        call rigid_bmat(s, w%r1, self%bm)
        call rigid_force(s, wv, w%qf)
        if (w%structured) then                               ! the products by the joints' blocks
          rd = lie_mass_times(s, wv - vh) + lie_bt_times(w%blk, self%bm, hl) - h * w%qf
        else
          rd = matmul(w%mm, wv - vh) + matmul(hl, self%bm) - h * w%qf
        end if
        select case (form)
        case (FORM_DAE3, FORM_DAES)
          call rigid_phi(s, w%x1, w%r1, rc)
          rc = rc / h
        case (FORM_DAE2)
          if (w%structured) then
            rc = lie_b_times(w%blk, self%bm, wv)
          else
            rc = matmul(self%bm, wv)
          end if
        case (FORM_DAE1)
          call rigid_bdotv(s, w%r1, wv, self%g)
          if (w%structured) then
            rc = lie_b_times(w%blk, self%bm, wv - vk) + h * self%g
          else
            rc = matmul(self%bm, wv - vk) + h * self%g
          end if
        end select
        if (w%structured) then
          call bd_assemble(self, h, wv, hl, vk)
          return
        end if
        ! momentum rows
        call rigid_force_v(s, wv, w%kvv)
        w%jac(1:nv, 1:nv) = w%mm - h * w%kvv
        call rigid_btl_q(s, w%r1, hl, w%kvv)
        call rigid_right_tangent(s, w%psi, w%kvv)
        w%jac(1:nv, 1:nv) = w%jac(1:nv, 1:nv) + h * w%kvv
        w%jac(1:nv, nv + 1:) = transpose(self%bm)
        w%jac(nv + 1:, nv + 1:) = 0
        ! constraint rows
        select case (form)
        case (FORM_DAE3, FORM_DAES)
          w%kmv = self%bm
          call rigid_right_tangent(s, w%psi, w%kmv)
          w%jac(nv + 1:, 1:nv) = w%kmv
        case (FORM_DAE2)
          call rigid_bw_q(s, w%r1, wv, w%kmv)
          call rigid_right_tangent(s, w%psi, w%kmv)
          w%jac(nv + 1:, 1:nv) = self%bm + h * w%kmv
        case (FORM_DAE1)
          call rigid_bw_q(s, w%r1, wv - vk, w%kmv)
          call rigid_bdotv_jac(s, w%r1, wv, self%kmv2, self%kmv3)
          w%kmv = w%kmv + h * self%kmv2
          call rigid_right_tangent(s, w%psi, w%kmv)
          w%jac(nv + 1:, 1:nv) = self%bm + h * w%kmv + h * self%kmv3
        end select
      end associate
    end associate
  end subroutine

  !> The structured Newton matrix of bd_eval (the matrix of the header entry by entry from the
  !> bodies' and joints' blocks: w%jm) at the iterate W (wv), h lam (hl); vk = V^k; B at q^{k+1}
  !> in self%bm.  Every entry it can touch is added whatever its value (its pattern is recorded by
  !> a call).
  subroutine bd_assemble(self, h, wv, hl, vk)
    class(lie_backward_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, wv(:), hl(:), vk(:)
    integer :: nv
    associate (s => self%sys, w => self%w)
      nv = w%nv
      call w%jm%zero()
      call lie_tangents(w, s%nb)
      call lie_add_mass(w%jm, s, 0, 0, 1.0_wp)
      call lie_add_force_v(w%jm, s, wv, 0, 0, -h)
      call rigid_btl_q(s, w%r1, hl, w%kvv)
      call lie_add_vv(w%blk, w%jm, s, w%kvv, 0, 0, h)
      call lie_add_vm(w%blk, w%jm, self%bm, 0, nv, 1.0_wp)
      select case (self%form)
      case (FORM_DAE3, FORM_DAES)
        call lie_add_mv(w%blk, w%jm, self%bm, nv, 0, 1.0_wp, .true.)
      case (FORM_DAE2)
        call rigid_bw_q(s, w%r1, wv, w%kmv)
        call lie_add_mv(w%blk, w%jm, self%bm, nv, 0, 1.0_wp, .false.)
        call lie_add_mv(w%blk, w%jm, w%kmv, nv, 0, h, .true.)
      case (FORM_DAE1)
        call rigid_bw_q(s, w%r1, wv - vk, w%kmv)
        call rigid_bdotv_jac(s, w%r1, wv, self%kmv2, self%kmv3)
        call lie_add_mv(w%blk, w%jm, self%bm, nv, 0, 1.0_wp, .false.)
        call lie_add_mv(w%blk, w%jm, w%kmv, nv, 0, h, .true.)
        call lie_add_mv(w%blk, w%jm, self%kmv2, nv, 0, h * h, .true.)
        call lie_add_mv(w%blk, w%jm, self%kmv3, nv, 0, h, .false.)
      end select
    end associate
  end subroutine

  !> The groups: W against 1 + |W|, h lam against 1 + |M W| (momentum units); the Phi/h rows
  !> (DAE3, DAES) leave a round-off eps (1 + |x|) / h in both: their floor is what changes the
  !> positions by an ulp.
  subroutine bd_measure(self, h)
    class(lie_backward_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    real(wp) :: sw, smw, amp
    associate (x => self%x, w => self%w)
      sw = 1 + maxabs(w%z(1:w%nv))
      smw = 1 + maxabs(lie_mass_times(self%sys, w%z(1:w%nv)))
      amp = max(1.0_wp, (1 + maxval(abs(x))) / (h * sw))
      call w%nc%group(w%dz(1:w%nv), sw, amp * sw)
      call w%nc%group(w%dz(w%nv + 1:), smw, amp * smw)
    end associate
  end subroutine

  !> The residual of bd_eval at its round-off floor (lie_newton): every row within NEWTON_FLOOR eps
  !> of what its terms' sizes let it be evaluated to: the momentum rows against |M W| + |M V_h| +
  !> |B^T h lam| + h |Q|; Phi/h against (1 + |x|)/h; B W against |B| |W|; B (W - V) + h Bdot W
  !> against |B| (|W| + |V|) + h |Bdot W| (nv terms per row product).
  !> backward (the test of a step next to a singular configuration, lie_newton): never passed here.
  !> These forms leave the branch at the crossings of IFToMM A02 in space (N = 40, h = 1e-3: lie_dae3's
  !> error 1.9 by t = 2.8, lie_dae2's and lie_dae1's 2.0); passing the step they stop at would
  !> only carry a wrong run on (lie_dae3 then ends the 20 s with error 2.0).
  logical function bd_floor(self, h, u, u2, backward)
    class(lie_backward_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    logical, intent(in) :: backward
    real(wp) :: e, sm, sc, bn
    integer :: nv
    bd_floor = .false.
    if (backward) return
    associate (w => self%w, vk => u, vh => u2)
      nv = w%nv
      e = NEWTON_FLOOR * epsilon(1.0_wp)
      bn = nv * maxval(abs(self%bm))
      if (w%structured) then
        sm = maxabs(lie_bt_times(w%blk, abs(self%bm), abs(w%z(nv + 1:))))
      else
        sm = maxabs(matmul(abs(w%z(nv + 1:)), abs(self%bm)))
      end if
      sm = sm + maxabs(lie_mass_times(self%sys, w%z(1:nv))) + maxabs(lie_mass_times(self%sys, vh)) + h * maxabs(w%qf)
      select case (self%form)
      case (FORM_DAE3, FORM_DAES)
        sc = (1 + maxval(abs(w%x1))) / h
      case (FORM_DAE2)
        sc = bn * maxabs(w%z(1:nv))
      case default
        sc = bn * (maxabs(w%z(1:nv)) + maxabs(vk)) + h * maxabs(self%g)
      end select
      bd_floor = maxabs(w%res(1:nv)) <= e * sm .and. maxabs(w%res(nv + 1:)) <= e * sc
    end associate
  end function

  !> The inverse of a (small, regular) matrix: LU and one solve per column.
  subroutine inverse(a, ainv)
    real(wp), intent(in) :: a(:, :)
    real(wp), intent(out) :: ainv(:, :)
    real(wp) :: lu(size(a, 1), size(a, 1))
    integer :: ipiv(size(a, 1)), info, j
    lu = a
    ainv = 0
    call lu_factor(lu, ipiv, info)
    do j = 1, size(a, 1)
      ainv(j, j) = 1
      call lu_solve(lu, ipiv, ainv(:, j))
    end do
  end subroutine

  !> Solve (B P B^T) y = rhs for y (m); info /= 0 if B P B^T is singular.
  subroutine bbt_solve(bm, pw, rhs, y, info)
    real(wp), intent(in) :: bm(:, :), pw(:, :), rhs(:)
    real(wp), intent(out) :: y(:)
    integer, intent(out) :: info
    real(wp) :: g(size(bm, 1), size(bm, 1))
    integer :: ipiv(size(bm, 1))
    info = 0
    if (size(bm, 1) == 0) return    ! no constraints: nothing to project (DAES = DAE3)
    g = matmul(bm, matmul(pw, transpose(bm)))
    call lu_factor(g, ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    y = rhs
    call lu_solve(g, ipiv, y)
  end subroutine

  !> Read the options; the DAES projection metric P (I as printed, M^-1 for the projected
  !> history); A and lam at the start from the index-3 system (lie_start); V'^0 = V^0, mu = omega = 0.
  subroutine lbd_init(self, s, info)
    class(lie_backward_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: i, nv, m
    if (.not. self%options_fit(nstats=NSTATS_LIE_BACKWARD, niopt=NIOPT_LIE_BACKWARD, nropt=NROPT_LIE_BACKWARD, &
                               info=info)) return
    self%form = self%iopt(IOPT_LIE_BACKWARD_FORM); self%history_mode = self%iopt(IOPT_LIE_BACKWARD_HISTORY)
    self%maxit = self%iopt(IOPT_LIE_BACKWARD_MAXIT)
    self%tol = self%ropt(ROPT_LIE_BACKWARD_TOL)
    if (self%form < FORM_DAE1 .or. self%form > FORM_DAES .or. .not. self%h > 0 .or. &
        self%history_mode < 0 .or. self%history_mode > 1) return
    call self%lie_start(s, info)                   ! first: it may keep fewer rows (sys%m)
    if (info /= 0) return
    nv = self%sys%nv; m = self%sys%m
    if (self%form == FORM_DAES) self%naux = nv + 2 * self%sys%mall   ! mu, omega of every row
    call lie_work_init(self%w, self%sys, nv + m)     ! (W, h lam)
    allocate(self%bm(m, nv), self%kmv2(m, nv), self%kmv3(m, nv), self%g(m))
    self%bm = 0; self%kmv2 = 0; self%kmv3 = 0
    ! the Newton matrix: dense, or structured (bd_assemble records its pattern)
    if (lie_structure_record(self%w, self%sys, self%iopt(IOPT_LIE_BACKWARD_LINEAR_SOLVER), 0)) then
      call bd_assemble(self, self%h, self%w%z(1:nv), self%w%z(nv + 1:), s%v)
      call lie_structure_setup(self%w, self%iopt(IOPT_LIE_BACKWARD_LINEAR_SOLVER), info)
      if (info /= 0) return
    end if
    self%stats(STAT_LIE_BACKWARD_LINEAR_SOLVER) = self%w%solver
    if (self%form == FORM_DAES .and. self%w%structured .and. m > 0) then
      ! the projections' matrix (daes_project): its pattern, the Newton matrix's solver
      call self%pm%record(nv + m)
      call lie_add_mass(self%pm, self%sys, 0, 0, 1.0_wp)
      call lie_add_vm(self%w%blk, self%pm, self%bm, 0, nv, 1.0_wp)
      call lie_add_mv(self%w%blk, self%pm, self%bm, nv, 0, 1.0_wp, .false.)
      call self%pm%setup(self%w%solver, info)
      if (info /= 0 .or. self%pm%out_of_pattern) then
        info = STATUS_BAD_INPUT
        return
      end if
    end if
    allocate(self%pw(nv, nv), self%mu(m), self%om(m))
    ! the projection metric P of DAES: I as printed, M^-1 for the projected history
    if (self%history_mode == 1) then
      call inverse(self%w%mm, self%pw)
    else
      self%pw = 0
      do i = 1, nv
        self%pw(i, i) = 1
      end do
    end if
    self%vp = s%v
    self%mu = 0; self%om = 0
  end subroutine

  !> One step: Newton on (W, h lam) from (V_h + h A, h lam), then the new state; DAES also
  !> the projections (V, mu) and (A, omega) at the converged q^{k+1}.
  subroutine lbd_step(self, h, t1, s, info)
    class(lie_backward_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: vh(self%sys%nv), ahat(self%sys%nv)
    integer :: nv
    nv = self%sys%nv
    associate (sys => self%sys, w => self%w, x => self%x, r => self%r, pw => self%pw, vp => self%vp)
      if (self%form == FORM_DAES .and. self%history_mode == 0) then
        vh = vp
      else
        vh = s%v
      end if
      w%z(1:nv) = vh + h * s%a
      w%z(nv + 1:) = h * s%lam
      call self%newton(h, s%v, vh, info)
      if (info /= 0) return
      ! the converged configuration
      w%psi = h * w%z(1:nv)
      call rigid_advance(sys, x, r, w%psi, w%x1, w%r1)
      x = w%x1; r = w%r1
      s%lam = w%z(nv + 1:) / h
      if (self%form == FORM_DAES .and. w%structured .and. self%sys%m > 0) then
        call rigid_bmat(sys, r, self%bm)
        vp = w%z(1:nv)
        call daes_project(self, h, vh, s, info)
        if (info /= 0) return
      else if (self%form == FORM_DAES) then
        call rigid_bmat(sys, r, self%bm)
        vp = w%z(1:nv)
        ahat = (vp - vh) / h
        call bbt_solve(self%bm, pw, -matmul(self%bm, vp), self%mu, info)
        if (info /= 0) return
        s%v = vp + matmul(pw, matmul(self%mu, self%bm))
        call rigid_bdotv(sys, r, s%v, self%g)
        call bbt_solve(self%bm, pw, -(matmul(self%bm, ahat) + self%g), self%om, info)
        s%a = ahat + matmul(pw, matmul(self%om, self%bm))
        if (self%history_mode == 1) s%lam = s%lam - self%om
      else
        s%a = (w%z(1:nv) - s%v) / h
        s%v = w%z(1:nv)
        vp = s%v
      end if
      call lie_pack(x, r, s%q)
    end associate
  end subroutine

  !> DAES's two projections of lbd_step on the joints' blocks (the structured path): with K = [P^-1
  !> B^T; B 0] (P^-1 = I printed, M projected; B at q^{k+1}, self%bm), K [V; -mu] = [P^-1 V'; 0] and
  !> K [A; -omega] = [P^-1 Ahat; -Bdot V] are bbt_solve's (B P B^T) mu = -B V', (B P B^T) omega =
  !> -(B Ahat + Bdot V), V = V' + P B^T mu, A = Ahat + P B^T omega: one factorization, two solves.
  !> info: STATUS_SINGULAR when K is.
  subroutine daes_project(self, h, vh, s, info)
    class(lie_backward_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, vh(:)
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: rhs(self%sys%nv + self%sys%m)
    integer :: nv
    nv = self%sys%nv
    associate (pm => self%pm, sys => self%sys, vp => self%vp)
      call pm%zero()
      if (self%history_mode == 1) then
        call lie_add_mass(pm, sys, 0, 0, 1.0_wp)
      else
        call lie_add_identity(pm, 0, nv, 1.0_wp)
      end if
      call lie_add_vm(self%w%blk, pm, self%bm, 0, nv, 1.0_wp)
      call lie_add_mv(self%w%blk, pm, self%bm, nv, 0, 1.0_wp, .false.)
      call pm%factor(info)
      if (info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      rhs(1:nv) = pinv(vp)
      rhs(nv + 1:) = 0
      call pm%solve(rhs)
      s%v = rhs(1:nv)
      self%mu = -rhs(nv + 1:)
      call rigid_bdotv(sys, self%r, s%v, self%g)
      rhs(1:nv) = pinv((vp - vh) / h)
      rhs(nv + 1:) = -self%g
      call pm%solve(rhs)
      s%a = rhs(1:nv)
      self%om = -rhs(nv + 1:)
      if (self%history_mode == 1) s%lam = s%lam - self%om
    end associate

  contains

    function pinv(u) result(y)
      real(wp), intent(in) :: u(:)
      real(wp) :: y(size(u))
      if (self%history_mode == 1) then
        y = lie_mass_times(self%sys, u)
      else
        y = u
      end if
    end function

  end subroutine

  !> The end of a run: the C memory of the Newton matrix and DAES's projections' matrix freed.
  subroutine lbd_finish(self)
    class(lie_backward_stepper_t), intent(inout) :: self
    call self%w%jm%release()
    call self%pm%release()
  end subroutine

  !> (V', mu, omega) per sample (DAES).
  subroutine lbd_aux(self, s, aux)
    class(lie_backward_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    integer :: nv, ma
    nv = self%sys%nv; ma = self%sys%mall
    aux = 0
    aux(1:nv) = self%vp
    if (allocated(self%rows)) then              ! a redundant system: mu, omega of the kept rows
      aux(nv + self%rows) = self%mu
      aux(nv + ma + self%rows) = self%om
    else
      aux(nv + 1:nv + ma) = self%mu
      aux(nv + ma + 1:) = self%om
    end if
  end subroutine

end module lie_backward
